"""Opening a turn without locks (PostgreSQL) and its guards (`services.turns.opening`).

The optimistic open reads the thread, its head and its live workspace without a
transaction, then writes everything in one statement guarded by "the thread row and
the head row are still as read". Each test changes one of them between the read and
the write (at the `unlocked-read` fault step) and checks that the turn still opens
as if the change had come first; the guard mechanism itself is checked on both
databases.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.dialect import GuardFailed, execute_all, moved
from haico.db.faults import Window
from haico.db.models import ChatHead, Conversation
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import threads as repo
from haico.events import actions
from haico.events import log as action_log
from haico.services.history import state as history_service
from haico.services.workspace import edits as workspace_service
from tests.helpers import as_user, db_of, recorded_sql
from tests.history_helpers import (
    draft_ids,
    history,
    thread_with_turns,
    turn_ok,
    without_ids,
    workspace,
)


async def _owner(app: FastAPI, thread_id: str) -> int:
    async with db_of(app).read() as s:
        conv = await s.get(Conversation, thread_id)
        assert conv is not None
        return conv.user_id


def _once_at_read(app: FastAPI, act: Callable[[], Awaitable[None]]) -> list[str]:
    """Run `act` the first time an optimistic open has read and not yet written;
    returns the steps seen (restored with the app)."""
    seen: list[str] = []

    async def hook(step: str) -> None:
        seen.append(step)
        if step == Window.UNLOCKED_READ and seen.count(step) == 1:
            await act()

    db_of(app).faults = hook
    return seen


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_an_edit_between_read_and_write_is_in_the_turns_snapshot(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A document edit committed after the open read the workspace: the thread row's
    guard fails the write, the open runs again with locks, and snapshot 3 (the
    workspace after turn 2) holds the edit the agent then starts from."""
    tid = await thread_with_turns(client, 2)
    user_id = await _owner(app, tid)

    async def edit() -> None:
        await workspace_service.put_document(
            db_of(app),
            principal=as_user(user_id),
            thread_id=tid,
            content="edited meanwhile",
            title="d",
        )

    seen = _once_at_read(app, edit)
    await turn_ok(client, tid, "objective: step 3")
    assert seen.count(Window.UNLOCKED_READ) == 1
    as_of_2 = await workspace(client, tid, as_of=2)
    assert as_of_2["document"] is not None
    assert as_of_2["document"]["content"] == "edited meanwhile"
    assert (await history(client, tid))["head_turn_id"] == f"{tid}:3"


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_the_optimistic_open_reads_in_one_statement_and_snapshots_every_part(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The thread, its head and its whole live workspace come back from one statement
    (the open's only read before its write), and the snapshot taken from it holds
    every part: objective, document, preferences (locked or not), todos (done,
    nested), artifacts and rejected items."""
    tid = await thread_with_turns(client, 1)
    await turn_ok(
        client,
        tid,
        "title: Notes; write: Cities are for people.; prefer: short; prefer: plain; "
        "prefer: gone; lock preference 1; subtodo: nested; done todo 1; "
        "artifact Sources: a report; remove preference 3",
    )
    before = await workspace(client, tid)
    assert before["document"]["content"] and before["artifacts"] and before["rejected"]
    assert [p["locked"] for p in before["preferences"]] == [True, False]
    assert [(t["done"], t["depth"]) for t in before["todos"]] == [(True, 0), (False, 1)]

    reads: list[str] = []
    with recorded_sql(db_of(app)) as statements:

        async def at_read() -> None:
            reads.extend(statements)

        _once_at_read(app, at_read)
        await turn_ok(client, tid, "objective: step 3")
    # Statements before the open (the request's own reads) come first: the open's read
    # is the last one before the guard step, and reads the workspace too. The event
    # pump's reads of the action log run beside the request on the same engine and may
    # fall anywhere in between: they are not the request's.
    reads = [r for r in reads if not r.lstrip().startswith("SELECT action_log.")]
    assert "json_agg" in reads[-1] and "chat_heads" in reads[-1]
    assert not any("json_agg" in r for r in reads[:-1])
    assert not any("FROM preferences" in r for r in reads[:-1])
    assert without_ids(await workspace(client, tid, as_of=2)) == without_ids(before)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_checkout_between_read_and_write_does_not_strand_the_turn(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A checkout to an earlier node lands after the open read the head: the head's
    guard fails the write; the send then makes its thread the working one again (an
    implicit checkout of its tip) and the turn opens there, on the head."""
    tid = await thread_with_turns(client, 3)
    user_id = await _owner(app, tid)

    async def move_away() -> None:
        await history_service.checkout(
            db_of(app), principal=as_user(user_id), thread_id=tid, turn_id=f"{tid}:1", retains=True
        )

    _once_at_read(app, move_away)
    events = await turn_ok(client, tid, "objective: step 4")
    name, started = events[0]
    # The turn hangs from the node the head held when it opened: the thread's tip.
    assert name == "turn_started"
    assert (started["node_id"], started["parent_node_id"]) == (f"{tid}:4", f"{tid}:3")
    h = await history(client, tid)
    assert h["head_turn_id"] == f"{tid}:4"
    assert h["working_thread_id"] == tid
    assert await draft_ids(app, tid) == []


async def test_a_guard_that_matches_no_row_fails_the_whole_write(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """On both databases: a write guarded by a stale row version changes nothing and
    logs nothing, and the error says a guard failed."""
    tid = await thread_with_turns(client, 1)
    db = db_of(app)
    async with db.read() as s:
        conv = await s.get(Conversation, tid)
        head = await s.get(ChatHead, tid)
        assert conv is not None and head is not None
        before = (conv.turn_index, head.version)
    stale_head = ChatHead(
        root_thread_id=tid,
        head_turn_id=head.head_turn_id,
        working_thread_id=tid,
        version=head.version + 7,
        updated_at=head.updated_at,
    )
    entry = actions.turn_started(f"{tid}:9", parent_turn_id=None, text="x", started_at="t")
    failures: list[BaseException] = []
    for attempt in range(2):
        try:
            async with db.transaction() as s:
                conv = await s.get(Conversation, tid)
                assert conv is not None
                writes = [heads_repo.turn_opened(stale_head), repo.clock_advance(conv, 9)]
                if attempt == 0:
                    await action_log.append_chat(s, tid, entry, after=writes)
                else:
                    await execute_all(s, *writes)
        except Exception as exc:
            failures.append(exc)
    assert len(failures) == 2, failures
    assert all(moved(exc) or isinstance(exc, GuardFailed) for exc in failures)
    async with db.read() as s:
        conv = await s.get(Conversation, tid)
        head = await s.get(ChatHead, tid)
        assert conv is not None and head is not None
        assert (conv.turn_index, head.version) == before
    log: list[dict[str, Any]] = []
    async with db.read() as s:
        log = [e.action for e in await action_log.read_after(s, after=0, root_thread_ids={tid})]
    assert not any(a.get("turnId") == f"{tid}:9" for a in log)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_every_live_edit_writes_the_thread_row(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The thread row's version is the optimistic open's guard for the live workspace,
    so every REST edit of it must write that row (a new row version)."""
    tid = await thread_with_turns(client, 1)
    base = f"/api/conversations/{tid}"

    async def version() -> int:
        async with db_of(app).read() as s:
            found = await s.scalar(select(repo.ROW_VERSION).where(Conversation.thread_id == tid))
            assert found is not None
            return int(found)

    pref = (await client.post(f"{base}/preferences", json={"text": "p"})).json()["id"]
    todo = (await client.post(f"{base}/todos", json={"text": "t"})).json()["id"]
    edits: list[tuple[str, str, dict[str, Any] | None]] = [
        ("PUT", f"{base}/objective", {"text": "o2"}),
        ("PUT", f"{base}/document", {"content": "c2"}),
        ("POST", f"{base}/preferences", {"text": "p2"}),
        ("PATCH", f"{base}/preferences/{pref}", {"locked": True}),
        ("DELETE", f"{base}/preferences/{pref}", None),
        ("POST", f"{base}/todos", {"text": "t2"}),
        ("PATCH", f"{base}/todos/{todo}", {"done": True}),
        ("DELETE", f"{base}/todos/{todo}", None),
    ]
    for method, path, body in edits:
        before = await version()
        r = await client.request(method, path, json=body)
        assert r.status_code < 300, (method, path, r.text)
        assert await version() != before, (method, path)


async def test_every_turn_open_moves_the_heads_version(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A checkout reads the family's active turn in the statement that locks the head,
    and trusts it only if the locked head is the version that statement's snapshot saw:
    that holds only if every lease is taken with a bump of the head's version. Both
    ways of opening do it (optimistic and, after a send that moved the head, locked),
    and the close bumps it again."""
    tid = await thread_with_turns(client, 2)
    db = db_of(app)

    async def version() -> int:
        async with db.read() as s:
            head = await s.get(ChatHead, tid)
            assert head is not None
            return head.version

    before = await version()
    await turn_ok(client, tid, "objective: step 3")
    assert await version() == before + 2  # opened, closed
    # A send after a checkout to an earlier node: the head moves back (one bump), then
    # the turn opens the locked way and closes (two more).
    r = await client.post(f"/api/conversations/{tid}/checkout", json={"turn_id": f"{tid}:1"})
    assert r.status_code == 200, r.text
    moved_to = await version()
    await turn_ok(client, tid, "objective: step 4")
    assert await version() == moved_to + 3
