"""A send on a restored draft (a branching send): decided by the send's first read,
the draft made a branch from what that read found, then the turn opened
(`services.turns.opening`).

The counts below are the work such a send does before its turn exists; a change that
reads the draft again, or checks access again, fails here.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.db.faults import Step
from haico.db.models import Conversation
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import threads as repo
from haico.services.history import heads
from haico.services.history import state as history_service
from haico.services.turns.manager import TurnManager
from tests.helpers import armed_faults, as_user, counted_calls, db_of, recorded_sql
from tests.history_helpers import (
    checkout,
    draft_ids,
    history,
    thread_with_turns,
    turn_ok,
    workspace,
)


async def _owner(app: FastAPI, thread_id: str) -> int:
    async with db_of(app).read() as s:
        conv = await s.get(Conversation, thread_id)
        assert conv is not None
        return conv.user_id


async def _edited_draft(client: httpx.AsyncClient, tid: str) -> str:
    """A draft restored at `tid:1` (the head was `tid:3`), its objective edited."""
    draft = str((await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"])
    r = await client.put(f"/api/conversations/{draft}/objective", json={"text": "kept"})
    assert r.status_code == 200, r.text
    return draft


def _reads_of_threads(statements: list[str]) -> list[str]:
    """The statements that read a thread with its branch row (a draft's rows)."""
    return [
        st
        for st in statements
        if st.lstrip().upper().startswith("SELECT") and "conversation_branches" in st
    ]


async def test_a_send_on_a_draft_reads_it_once_and_checks_access_once(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Until its turn exists, a branching send reads the draft's rows once on the
    optimistic way (PostgreSQL): the read that finds the draft is the one the open
    writes from. The locked way (SQLite) reads them twice: to find the draft, and
    under the lock that opens the turn, since nothing else guards that read there.
    Access is checked by that same read (once) or with each locked read."""
    tid = await thread_with_turns(client, 3)
    draft = await _edited_draft(client, tid)
    user_id = await _owner(app, tid)
    manager: TurnManager = app.state.handles.turns
    postgres = db_of(app).dialect.is_postgres
    unlocked = counted_calls(monkeypatch, heads_repo, "read_with_head")
    locked = counted_calls(monkeypatch, heads_repo, "lock_with_head")
    checked = counted_calls(monkeypatch, heads, "check_for")
    looked_up = counted_calls(monkeypatch, repo, "get_branch")
    with recorded_sql(db_of(app)) as statements:
        turn = await manager.start_turn(
            principal=as_user(user_id), thread_id=draft, content="todo: b"
        )
        before_the_turn = list(statements)
    events = [(e.name, e.data) async for e in turn.events()]
    assert events[0] == (
        "turn_started",
        {"turn_index": 2, "node_id": f"{draft}:2", "parent_node_id": f"{tid}:1"},
    )
    assert events[-1][0] == "turn_completed", events[-1]
    assert await draft_ids(app, tid) == []
    assert (await workspace(client, draft))["objective"] == "kept"
    if postgres:
        assert (len(unlocked), len(locked), len(checked)) == (1, 0, 0)
        assert len(_reads_of_threads(before_the_turn)) == 1, before_the_turn
        # the read, the branch's activation, the guarded opening (10 statements and 5
        # reads before the send was decided up front)
        assert len(before_the_turn) == 3, before_the_turn
    else:
        assert (len(unlocked), len(locked), len(checked)) == (0, 2, 2)
        assert len(_reads_of_threads(before_the_turn)) == 2, before_the_turn
        # with the three BEGIN IMMEDIATEs (20 statements and 5 reads before the send
        # was decided up front)
        assert len(before_the_turn) == 12, before_the_turn
    # the draft's branch row is never looked up on its own
    assert looked_up == []


async def test_a_failure_after_the_branch_is_made_keeps_it_for_the_next_send(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The draft became a branch (committed) and the open fails before the turn
    exists: the send answers an error with no stream, the branch stays (same id, the
    working thread, its edits, no turn of its own, the head at its branch point, no
    active turn), and the next send on it opens its turn there."""
    tid = await thread_with_turns(client, 3)
    draft = await _edited_draft(client, tid)
    with armed_faults(db_of(app), "fail") as armed:
        armed["fail"] = Step.BRANCHED
        r = await client.post(f"/api/conversations/{draft}/turns", json={"content": "todo: b"})
        assert r.status_code == 500, r.text
        assert Step.BRANCHED in armed["seen"]
    h = await history(client, tid)
    assert (h["working_thread_id"], h["head_turn_id"], h["active_turn"]) == (
        draft,
        f"{tid}:1",
        None,
    )
    assert await draft_ids(app, tid) == []
    listed = {c["thread_id"]: c for c in (await client.get("/api/conversations")).json()}
    assert listed[draft]["parent_thread_id"] == tid
    assert listed[draft]["branch_point_turn"] == 1
    assert (await workspace(client, draft))["objective"] == "kept"
    events = await turn_ok(client, draft, "todo: again")
    assert events[0][1] == {"turn_index": 2, "node_id": f"{draft}:2", "parent_node_id": f"{tid}:1"}
    msgs = (await client.get(f"/api/conversations/{draft}/messages")).json()
    asked = [(m["content"], m["turn_index"]) for m in msgs if m["role"] == "user"]
    assert asked == [("objective: step 1; todo: t1", 1), ("todo: again", 2)]


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_checkout_between_the_branch_and_the_open_answers_conflict(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """Another checkout lands after the draft became a branch and before the open
    (PostgreSQL, the optimistic way): the open's guard fails, the locked way finds the
    thread no longer the working one, and the send answers 409 with no turn opened."""
    tid = await thread_with_turns(client, 3)
    draft = await _edited_draft(client, tid)
    user_id = await _owner(app, tid)
    done: list[Any] = []

    async def hook(step: str) -> None:
        if step == Step.BRANCHED and not done:
            done.append(
                await history_service.checkout(
                    db_of(app),
                    principal=as_user(user_id),
                    thread_id=tid,
                    turn_id=f"{tid}:3",
                    retains=True,
                )
            )

    db_of(app).faults = hook
    r = await client.post(f"/api/conversations/{draft}/turns", json={"content": "todo: b"})
    assert done and done[0].head_turn_id == f"{tid}:3", done
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "conflict"
    h = await history(client, tid)
    assert (h["working_thread_id"], h["head_turn_id"], h["active_turn"]) == (
        tid,
        f"{tid}:3",
        None,
    )
    # the branch is kept: sending on it again checks it out and runs the turn there
    events = await turn_ok(client, draft, "todo: c")
    assert events[0][1]["node_id"] == f"{draft}:2"
