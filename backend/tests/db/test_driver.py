"""Statements run on the driver directly (`Database.driver`, PostgreSQL): a turn's
opening and closing; and inside a session's transaction (`driver.of_session`): a
workspace's rows, the writes of `execute_all` and the action log's appends.

What must hold there as it does through a session: the server's errors arrive as
SQLAlchemy's (a second lease is an `IntegrityError`, a failed guard says so), a
connection lost mid-statement is not handed out again, what a statement logged reaches
the commit listeners even when the caller fails after it, and a statement the driver
path cannot run whole (a Python-side default) is refused before it runs.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Text, bindparam, cast, func, insert, select, text, update
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.exc import DBAPIError, IntegrityError

from haico.db import base
from haico.db.base import table_of
from haico.db.dialect import execute_all, moved
from haico.db.driver import of_session, prepared
from haico.db.models import (
    ActionLogEntry,
    ActiveTurn,
    Conversation,
    Preference,
    WorkspaceSnapshot,
)
from haico.db.outage import is_store_outage
from haico.db.repositories import live as live_repo
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as threads_repo
from haico.domain import NodeState
from haico.events import actions
from haico.events import log as action_log
from tests.helpers import db_of, lease_write
from tests.history_helpers import turn_ok

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


async def _thread(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={"title": "driver"})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def _leases(app: FastAPI, tid: str) -> list[str]:
    async with db_of(app).read() as s:
        rows = await s.scalars(
            select(ActiveTurn.process_id).where(ActiveTurn.root_thread_id == tid)
        )
        return list(rows)


async def _logged(app: FastAPI, tid: str) -> int:
    async with db_of(app).read() as s:
        query = select(func.count()).where(ActionLogEntry.root_thread_id == tid)
        return int(await s.scalar(query) or 0)


async def test_a_second_lease_is_an_integrity_error_and_writes_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await _thread(client)
    db = db_of(app)
    started = actions.turn_started(f"{tid}:1", parent_turn_id=None, text="x", started_at="t")
    async with db.driver() as d:
        await action_log.append_chat_now(d, tid, started, after=[lease_write(tid, "p1")])
    logged = await _logged(app, tid)
    with pytest.raises(IntegrityError):
        async with db.driver() as d:
            await action_log.append_chat_now(d, tid, started, after=[lease_write(tid, "p2")])
    assert await _leases(app, tid) == ["p1"]
    assert await _logged(app, tid) == logged


async def test_a_failed_guard_says_so_and_writes_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await _thread(client)
    db = db_of(app)
    async with db.read() as s:
        conv = await threads_repo.get_thread(s, tid)
    assert conv is not None
    started = actions.turn_started(f"{tid}:1", parent_turn_id=None, text="x", started_at="t")
    stale = threads_repo.clock_advance_if_unchanged(conv, 1, row_version=1)  # never xmin 1
    logged = await _logged(app, tid)
    with pytest.raises(DBAPIError) as failed:
        async with db.driver() as d:
            await action_log.append_chat_now(d, tid, started, after=[stale, lease_write(tid, "p1")])
    assert moved(failed.value)
    assert await _leases(app, tid) == []
    assert await _logged(app, tid) == logged


async def test_a_connection_lost_mid_statement_is_not_handed_out_again(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await _thread(client)
    db = db_of(app)
    stmt = select(func.pg_sleep(5))
    with pytest.raises(BaseException) as lost:
        async with db.driver() as d:
            mine = await d.conn.fetchval("SELECT pg_backend_pid()")

            async def kill() -> None:
                async with db.engine.connect() as other:
                    # once the statement is running
                    running = text(
                        "SELECT count(*) FROM pg_stat_activity WHERE pid = :pid "
                        "AND state = 'active' AND query LIKE '%pg_sleep%'"
                    )
                    while not (await other.execute(running, {"pid": mine})).scalar():
                        await other.rollback()  # a new transaction sees new activity
                        await asyncio.sleep(0.01)
                    await other.exec_driver_sql(f"SELECT pg_terminate_backend({int(mine)})")

            killer = asyncio.create_task(kill())
            try:
                await d.fetch(stmt, {})
            finally:
                await killer
    assert is_store_outage(lost.value)
    # The pool hands out working connections, never the dead one, and a turn still runs.
    seen = []
    for _ in range(5):
        async with db.driver() as d:
            seen.append(await d.conn.fetchval("SELECT pg_backend_pid()"))
    assert mine not in seen
    await turn_ok(client, tid, "after the outage")


async def test_what_a_statement_logged_is_told_even_when_the_caller_fails_after(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await _thread(client)
    db = db_of(app)
    heard: list[int] = []
    db.commit_listeners.append(lambda entries: heard.extend(e.seq for e in entries))
    started = actions.turn_started(f"{tid}:1", parent_turn_id=None, text="x", started_at="t")
    with pytest.raises(RuntimeError):
        async with db.driver() as d:
            (entry,) = await action_log.append_chat_now(d, tid, started, after=[])
            raise RuntimeError("after the statement")
    assert heard == [entry.seq]


def test_a_statement_that_needs_a_python_side_default_is_refused(app: FastAPI) -> None:
    """The snapshot row's `reply` has a Python-side default: an INSERT that leaves it
    out cannot run on the driver (SQLAlchemy computes that value at execution); the
    snapshot write the open uses gives it."""
    dialect = db_of(app).engine.dialect
    table = table_of(WorkspaceSnapshot)
    partial = insert(table).values(thread_id="t", turn_index=1)
    with pytest.raises(ValueError, match="Python-side insert defaults"):
        prepared(partial, dialect)
    snapshot, _ = snap_repo.snapshot_write(
        thread_id="t",
        turn_index=1,
        format=3,
        objective=None,
        document_title=None,
        document_hash=None,
        preferences=[],
        todos=[],
        rejected=[],
        user_message="m",
        state=NodeState.RUNNING,
        author=None,
    )
    assert prepared(snapshot, dialect).sql.startswith("INSERT INTO workspace_snapshots")


async def test_a_stamp_left_out_is_written_by_the_app(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`created_at` is a `Stamp`: an INSERT on the driver that leaves it out runs, and
    the row holds the application's clock (stopped here at a known moment, so not the
    database's `now()`), to the microsecond; a stamp given is kept as given."""
    table = table_of(ActionLogEntry)
    action = cast(bindparam("a", type_=Text()), JSONB)
    left_out = insert(table).values(channel="stamp", action=action).returning(table.c.created_at)
    given = (
        insert(table)
        .values(channel="stamp", action=action, created_at=bindparam("at"))
        .returning(table.c.created_at)
    )
    app_clock = datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)
    monkeypatch.setattr(base, "now", lambda: app_clock, raising=False)
    async with db_of(app).driver() as d:
        (stamped,) = await d.fetch(left_out, {"a": "{}"})
        (kept,) = await d.fetch(given, {"a": "{}", "at": app_clock.replace(year=2025)})
    assert stamped[0] == app_clock
    assert kept[0] == app_clock.replace(year=2025)


# ---- inside a session's transaction (`driver.of_session`) ----


async def test_a_session_driver_runs_inside_the_sessions_transaction(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A workspace read and a write on the session's connection see, and are seen by,
    the session's own uncommitted work, and go away with its rollback; before the
    session's first statement, while it holds unwritten changes, or in an autocommit
    session, the caller is sent through the session."""
    tid = await _thread(client)
    db = db_of(app)
    with pytest.raises(RuntimeError, match="roll back"):
        async with db.transaction() as s:
            assert await of_session(s) is None  # nothing has begun on the server yet
            await s.execute(text("SELECT 1"))
            conv = await threads_repo.get_thread(s, tid)
            assert conv is not None
            conv.objective = "unwritten"
            assert await of_session(s) is None  # a pending change: not without a flush
            await s.execute(
                insert(Preference).values(uid="u1", thread_id=tid, text="p", position=0)
            )
            assert await of_session(s, flush=True) is not None  # flushed: on the driver
            # The read (on the driver) sees the insert.
            rows = await live_repo.live_rows(s, tid)
            assert [p.text for p in rows.preferences] == ["p"]
            assert (
                await s.scalar(select(Conversation.objective).where(Conversation.thread_id == tid))
            ) == "unwritten"
            # A write on the driver is seen by the session.
            await execute_all(
                s,
                (
                    update(table_of(Preference))
                    .values(text="q")
                    .where(table_of(Preference).c.uid == "u1"),
                    {},
                ),
                (
                    update(table_of(Conversation))
                    .values(title="t2")
                    .where(table_of(Conversation).c.thread_id == tid),
                    {},
                ),
            )
            assert await s.scalar(select(Preference.text).where(Preference.uid == "u1")) == "q"
            raise RuntimeError("roll back")
    async with db.read() as s:
        assert (await live_repo.live_rows(s, tid)).preferences == []
        assert (
            await s.scalar(select(Conversation.title).where(Conversation.thread_id == tid))
            == "driver"
        )
    async with db.one_statement() as s:
        await s.execute(text("SELECT 1"))
        assert await of_session(s) is None  # autocommit: each statement its own transaction
