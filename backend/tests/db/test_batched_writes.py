"""Writes that go together: `execute_all` and the action-log append that carries the
writes of a turn's open and close (`append_chat(..., after=...)`).

On PostgreSQL they are one statement; on SQLite one statement after another. Either
way they are one transaction: all land or none does. On PostgreSQL the writes run
before the global append lock is taken, so a transaction that holds a row they wait
for can still take that lock (no deadlock).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, text
from sqlalchemy.exc import IntegrityError

from haico.db.dialect import execute_all
from haico.db.models import ActionLogEntry, ActiveTurn, ChatHead, Conversation
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import threads as repo
from haico.domain import LoggedAction, NodeState
from haico.events import actions
from haico.events import log as action_log
from haico.services.history import heads
from tests.helpers import db_of, lease_write


async def _thread(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={"title": "batched"})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def _counts(app: FastAPI, tid: str) -> tuple[int, int, int]:
    """(message count, active-turn rows, action-log entries) of the family `tid`."""
    async with db_of(app).read() as s:
        messages = await s.scalar(
            select(Conversation.message_count).where(Conversation.thread_id == tid)
        )
        leases = await s.scalar(
            select(func.count()).select_from(ActiveTurn).where(ActiveTurn.root_thread_id == tid)
        )
        logged = await s.scalar(
            select(func.count())
            .select_from(ActionLogEntry)
            .where(ActionLogEntry.root_thread_id == tid)
        )
    return int(messages or 0), int(leases or 0), int(logged or 0)


async def test_writes_and_their_log_entry_land_together(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await _thread(client)
    before = await _counts(app, tid)
    async with db_of(app).transaction() as s:
        entries = await action_log.append_chat(
            s,
            tid,
            actions.turn_started(f"{tid}:1", parent_turn_id=None, text="hi", started_at="t"),
            after=[repo.turn_finished(tid), lease_write(tid)],
        )
    assert len(entries) == 1 and entries[0].seq > 0
    assert await _counts(app, tid) == (before[0] + 2, 1, before[2] + 1)
    # Without log rows the writes still run (execute_all alone).
    async with db_of(app).transaction() as s:
        await action_log.append_chat(
            s, tid, after=[heads_repo.lease_release(root_thread_id=tid, process_id="p1")]
        )
    assert (await _counts(app, tid))[1] == 0


async def test_one_failing_write_leaves_nothing_behind(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A second lease for the family violates the primary key: the statement fails,
    and neither the other write nor the log entry is kept."""
    tid = await _thread(client)
    async with db_of(app).transaction() as s:
        await execute_all(s, lease_write(tid))
    before = await _counts(app, tid)
    with pytest.raises(IntegrityError):
        async with db_of(app).transaction() as s:
            await action_log.append_chat(
                s,
                tid,
                actions.turn_started(f"{tid}:2", parent_turn_id=None, text="x", started_at="t"),
                after=[repo.turn_finished(tid), lease_write(tid, "p2")],
            )
    assert await _counts(app, tid) == before


async def test_one_statement_writes_all_or_nothing_and_reports_what_it_logged(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """`Database.one_statement` (autocommit on PostgreSQL, a transaction on SQLite):
    the writes and their log entry land together and the event bus hears of the entry;
    a failing statement keeps nothing; an error raised after the statement keeps what
    it wrote, and the bus still hears of it."""
    db = db_of(app)
    tid = await _thread(client)
    heard: list[int] = []

    def listener(entries: list[LoggedAction]) -> None:
        heard.extend(e.seq for e in entries)

    db.commit_listeners.append(listener)
    try:
        before = await _counts(app, tid)
        async with db.one_statement() as s:
            (entry,) = await action_log.append_chat(
                s,
                tid,
                actions.turn_started(f"{tid}:1", parent_turn_id=None, text="a", started_at="t"),
                after=[repo.turn_finished(tid), lease_write(tid)],
            )
        assert heard == [entry.seq]
        assert await _counts(app, tid) == (before[0] + 2, 1, before[2] + 1)

        with pytest.raises(IntegrityError):
            async with db.one_statement() as s:
                await action_log.append_chat(
                    s,
                    tid,
                    actions.turn_started(f"{tid}:2", parent_turn_id=None, text="b", started_at="t"),
                    after=[repo.turn_finished(tid), lease_write(tid, "p2")],
                )
        assert await _counts(app, tid) == (before[0] + 2, 1, before[2] + 1)
        assert heard == [entry.seq]

        with pytest.raises(RuntimeError, match="after the write"):
            async with db.one_statement() as s:
                (later,) = await action_log.append_chat(
                    s,
                    tid,
                    actions.turn_ended(f"{tid}:1", state=NodeState.COMPLETE, duration_ms=1),
                    after=[heads_repo.lease_release(root_thread_id=tid, process_id="p1")],
                )
                raise RuntimeError("failed after the write")
        if db.is_sqlite:  # one transaction there: rolled back with the error
            assert await _counts(app, tid) == (before[0] + 2, 1, before[2] + 1)
            assert heard == [entry.seq]
        else:  # the statement committed on its own
            assert await _counts(app, tid) == (before[0] + 2, 0, before[2] + 2)
            assert heard == [entry.seq, later.seq]
    finally:
        db.commit_listeners.remove(listener)


async def test_a_parameter_with_two_values_is_refused_before_any_write(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await _thread(client)
    other = await _thread(client)
    before = await _counts(app, tid)
    with pytest.raises(ValueError, match="tf_thread"):
        async with db_of(app).transaction() as s:
            await execute_all(s, repo.turn_finished(tid), repo.turn_finished(other))
    assert await _counts(app, tid) == before


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_writes_wait_for_row_locks_before_taking_the_append_lock(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A holds the family's head row and will append next; B's writes move that head
    and B appends. B waits for the row without holding the append lock, so A gets the
    lock at once, commits, and B then finishes. (Were the lock taken first, A and B
    would deadlock and PostgreSQL would abort one.) PostgreSQL only: SQLite writers
    queue on one write lock."""
    tid = await _thread(client)
    db = db_of(app)
    async with db.transaction() as s:
        working = (await heads.read_head(s, tid)).working_thread_id  # created if missing

    a_holds = asyncio.Event()
    a_may_finish = asyncio.Event()

    async def a() -> None:
        async with db.transaction() as s:
            await s.execute(
                select(ChatHead).where(ChatHead.root_thread_id == tid).with_for_update()
            )
            a_holds.set()
            await a_may_finish.wait()
            await action_log.append_chat(
                s,
                tid,
                actions.turn_started(f"{tid}:9", parent_turn_id=None, text="a", started_at="t"),
            )

    async def b() -> None:
        await a_holds.wait()
        async with db.transaction() as s:
            await action_log.append_chat(
                s,
                tid,
                actions.turn_started(f"{tid}:8", parent_turn_id=None, text="b", started_at="t"),
                after=[
                    heads_repo.head_advance(
                        root_thread_id=tid, working_thread_id=working, head_turn_id=f"{tid}:8"
                    )
                ],
            )

    task_a = asyncio.create_task(a())
    task_b = asyncio.create_task(b())
    await a_holds.wait()
    await _until_waiting_on_a_row_lock(app)
    a_may_finish.set()
    await asyncio.wait_for(asyncio.gather(task_a, task_b), timeout=20)
    async with db.read() as s:
        moved = await s.get(ChatHead, tid)
        assert moved is not None and moved.head_turn_id == f"{tid}:8"


async def _until_waiting_on_a_row_lock(app: FastAPI) -> None:
    """Until some backend of this database waits for a row (transaction id) lock."""
    for _ in range(200):
        async with db_of(app).read() as s:
            waiting = await s.scalar(
                text(
                    "SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid "
                    "WHERE NOT l.granted AND l.locktype = 'transactionid' "
                    "AND a.datname = current_database()"
                )
            )
        if waiting:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("B never waited for the head row")


def test_notify_payloads_round_trip_and_name_at_most_100_families() -> None:
    payload = action_log.notify_payload("o1", 5, 7, "th_a,th_b")
    assert action_log.parse_notice(payload) == action_log.Notice(
        "o1", 5, 7, frozenset({"th_a", "th_b"})
    )
    assert action_log.parse_notice("o1 5 7 *") == action_log.Notice("o1", 5, 7, None)
    assert action_log.parse_notice("an old payload") is None
    assert action_log._families(["th_a", "th_a", "th_b"]) == "th_a,th_b"
    assert action_log._families(["th_a", None]) == "*"
    assert action_log._families([f"th_{i}" for i in range(101)]) == "*"
