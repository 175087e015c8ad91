"""Branches and forks through the REST API, on both storage backends."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, func, select

from haico.db.faults import Step
from haico.db.models import Conversation, ConversationBranch, WorkspaceSnapshot
from haico.domain import BranchStatus
from haico.services.access import users
from haico.services.families import conversations
from haico.services.history import seeding
from haico.wiring import janitor
from tests.helpers import add_branch_row, armed_faults, db_of
from tests.sse_client import send_turn


async def _thread_with_turns(client: httpx.AsyncClient) -> str:
    tid = (await client.post("/api/conversations", json={"title": "Essay"})).json()["thread_id"]
    await send_turn(client, tid, "objective: first; prefer: short; todo: outline")
    await send_turn(
        client, tid, "title: Draft; write: Para one.; lock preference 1; subtodo: intro"
    )
    await send_turn(client, tid, "artifact Notes: n1; prefer: formal; done todo 1")
    await send_turn(client, tid, "objective: fourth")
    return str(tid)


@pytest.fixture
async def tid(client: httpx.AsyncClient) -> str:
    return await _thread_with_turns(client)


@pytest.fixture
def faults(app: FastAPI) -> Iterator[dict[str, Any]]:
    """Arm `faults["phase"]` to make that phase of branch creation raise."""
    with armed_faults(db_of(app), "phase") as armed:
        yield armed


async def test_branch_copies_workspace_as_of_turn(client: httpx.AsyncClient, tid: str) -> None:
    as_of = (await client.get(f"/api/conversations/{tid}/workspace?as_of_turn=3")).json()
    r = await client.post(
        f"/api/conversations/{tid}/branch", json={"from_turn": 3, "reason": "try formal"}
    )
    assert r.status_code == 201, r.text
    b = r.json()
    assert b["parent_thread_id"] == tid and b["branch_point_turn"] == 3
    assert b["root_thread_id"] == tid and b["reason"] == "try formal"
    assert b["turn_index"] == 3 and b["message_count"] == 6
    ws = (await client.get(f"/api/conversations/{b['thread_id']}/workspace")).json()
    assert ws["objective"] == as_of["objective"] == "first"
    assert ws["document"] == {"title": "Draft", "content": "Para one."}
    assert [(p["text"], p["locked"], p["position"]) for p in ws["preferences"]] == [
        ("short", True, 0),
        ("formal", False, 1),
    ]
    assert [p["uid"] for p in ws["preferences"]] == [p["uid"] for p in as_of["preferences"]]
    assert [(t["text"], t["done"], t["depth"]) for t in ws["todos"]] == [
        ("outline", True, 0),
        ("intro", False, 1),
    ]
    assert [(a["title"], a["turn_index"]) for a in ws["artifacts"]] == [("Notes", 3)]
    # The parent is untouched and the branch has no snapshot of its own yet.
    parent = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert parent["objective"] == "fourth"
    listed = {c["thread_id"]: c for c in (await client.get("/api/conversations")).json()}
    assert listed[b["thread_id"]]["parent_thread_id"] == tid


async def test_branch_snapshots_are_not_copied(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 2})).json()
    async with db_of(app).read() as s:
        n = await s.scalar(
            select(func.count()).where(WorkspaceSnapshot.thread_id == b["thread_id"])
        )
    assert n == 0


async def test_branch_transcript_prefix_and_turn_numbering(
    client: httpx.AsyncClient, tid: str
) -> None:
    parent_msgs = (await client.get(f"/api/conversations/{tid}/messages")).json()
    b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 2})).json()
    msgs = (await client.get(f"/api/conversations/{b['thread_id']}/messages")).json()
    expected = [m for m in parent_msgs if m["turn_index"] <= 2]
    assert [(m["role"], m["content"]) for m in msgs] == [
        (m["role"], m["content"]) for m in expected
    ]
    _, events, _ = await send_turn(client, b["thread_id"], "objective: on the branch")
    assert events[0][1] == {
        "turn_index": 3,
        "node_id": f"{b['thread_id']}:3",
        "parent_node_id": f"{tid}:2",
    }
    msgs = (await client.get(f"/api/conversations/{b['thread_id']}/messages")).json()
    assert msgs[-1]["turn_index"] == 3
    # the parent's own history is untouched
    after = (await client.get(f"/api/conversations/{tid}/messages")).json()
    assert after == parent_msgs


async def test_branch_at_zero_and_override(client: httpx.AsyncClient, tid: str) -> None:
    override = {
        "objective": "edited",
        "preferences": [{"text": "mine", "locked": True}],
        "document": {"content": "New body"},
    }
    r = await client.post(
        f"/api/conversations/{tid}/branch", json={"from_turn": 3, "workspace": override}
    )
    ws = (await client.get(f"/api/conversations/{r.json()['thread_id']}/workspace")).json()
    assert ws["objective"] == "edited"
    assert [(p["text"], p["locked"]) for p in ws["preferences"]] == [("mine", True)]
    assert ws["document"] == {"title": "Draft", "content": "New body"}  # title fell back
    assert [t["text"] for t in ws["todos"]] == ["outline", "intro"]  # todos fell back
    r = await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 0})
    assert r.status_code == 201
    zero = r.json()
    assert zero["branch_point_turn"] == 0 and zero["message_count"] == 0
    ws = (await client.get(f"/api/conversations/{zero['thread_id']}/workspace")).json()
    assert ws == {
        "objective": None,
        "document": None,
        "preferences": [],
        "todos": [],
        "artifacts": [],
        "rejected": [],
    }
    assert (await client.get(f"/api/conversations/{zero['thread_id']}/messages")).json() == []


async def test_branch_validation(app: FastAPI, client: httpx.AsyncClient, tid: str) -> None:
    url = f"/api/conversations/{tid}/branch"
    r = await client.post(url, json={"from_turn": -1})
    assert r.status_code == 422 and "from_turn" in r.json()["message"]
    r = await client.post(url, json={"from_turn": 5})
    assert r.status_code == 404 and r.json()["code"] == "invalid_turn"
    r = await client.post("/api/conversations/th_" + "2" * 32 + "/branch", json={"from_turn": 0})
    assert r.status_code == 404
    b = (await client.post(url, json={"from_turn": 2})).json()
    for k in (0, 1, 2):
        r = await client.post(f"/api/conversations/{b['thread_id']}/branch", json={"from_turn": k})
        assert r.status_code == 400 and r.json()["code"] == "invalid_branch_point"
    await send_turn(client, b["thread_id"], "objective: b3")
    r = await client.post(f"/api/conversations/{b['thread_id']}/branch", json={"from_turn": 3})
    assert r.status_code == 201
    # someone else's thread
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    r = await client.post(f"/api/conversations/{foreign.thread_id}/branch", json={"from_turn": 0})
    assert r.status_code == 403
    # a missing snapshot cannot be restored
    async with db_of(app).transaction() as s:
        await s.execute(
            delete(WorkspaceSnapshot).where(
                WorkspaceSnapshot.thread_id == tid, WorkspaceSnapshot.turn_index == 2
            )
        )
    r = await client.post(url, json={"from_turn": 1})
    assert r.status_code == 409 and r.json()["code"] == "snapshot_missing"
    # a deleted thread
    await client.delete(f"/api/conversations/{b['thread_id']}")
    r = await client.post(f"/api/conversations/{b['thread_id']}/branch", json={"from_turn": 3})
    assert r.status_code == 404


async def _family_rows(app: FastAPI, root: str) -> int:
    async with db_of(app).read() as s:
        n = await s.scalar(select(func.count()).where(Conversation.root_thread_id == root))
    return int(n or 0)


@pytest.mark.parametrize("phase", [Step.COPY, Step.SEED, Step.ACTIVATE])
async def test_failure_at_each_phase_leaves_nothing(
    app: FastAPI, client: httpx.AsyncClient, tid: str, faults: dict[str, Any], phase: str
) -> None:
    before = await _family_rows(app, tid)
    created: list[str] = []
    runtime = app.state.runtime
    original_seed = runtime.seed

    async def spy(*, thread_id: str, messages: list[Any], metadata: dict[str, Any]) -> None:
        created.append(thread_id)
        await original_seed(thread_id=thread_id, messages=messages, metadata=metadata)

    runtime.seed = spy
    faults["phase"] = phase
    try:
        r = await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 2})
    finally:
        runtime.seed = original_seed
    assert r.status_code == (500 if phase == Step.COPY else 502)
    if phase != Step.COPY:
        assert r.json()["code"] == "seeding_failed"
    assert await _family_rows(app, tid) == before
    async with db_of(app).read() as s:
        orphans = await s.scalar(
            select(func.count()).where(ConversationBranch.parent_thread_id == tid)
        )
    assert orphans == 0
    for thread_id in created:  # the seeded transcript was removed too
        assert await runtime.raw_messages(thread_id) == []
    assert [c["thread_id"] for c in (await client.get("/api/conversations")).json()] == [tid]
    faults["phase"] = None
    r = await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 2})
    assert r.status_code == 201


async def test_pending_branch_is_invisible_while_seeding(
    app: FastAPI, client: httpx.AsyncClient, tid: str, faults: dict[str, Any]
) -> None:
    seen: dict[str, Any] = {}

    async def hook(phase: str) -> None:
        if phase == Step.SEED:
            async with db_of(app).read() as s:
                row = (
                    await s.execute(
                        select(ConversationBranch).where(ConversationBranch.parent_thread_id == tid)
                    )
                ).scalar_one()
            seen["status"] = row.status
            seen["listed"] = [
                c["thread_id"] for c in (await client.get("/api/conversations")).json()
            ]
            seen["get"] = (await client.get(f"/api/conversations/{row.thread_id}")).status_code

    db_of(app).faults = hook
    r = await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1})
    assert r.status_code == 201
    assert seen == {"status": "pending", "listed": [tid], "get": 404}


async def test_fork_starts_a_new_family(client: httpx.AsyncClient, tid: str) -> None:
    r = await client.post(f"/api/conversations/{tid}/fork", json={"from_turn": 2})
    assert r.status_code == 201, r.text
    f = r.json()
    assert f["root_thread_id"] == f["thread_id"] != tid
    assert f["parent_thread_id"] is None
    assert f["forked_from"] == {"thread_id": tid, "turn_index": 2}
    assert f["turn_index"] == 2
    ws = (await client.get(f"/api/conversations/{f['thread_id']}/workspace")).json()
    assert ws["objective"] == "first" and ws["document"]["title"] == "Draft"
    msgs = (await client.get(f"/api/conversations/{f['thread_id']}/messages")).json()
    assert [m["turn_index"] for m in msgs if m["role"] == "user"] == [1, 2]
    _, events, _ = await send_turn(client, f["thread_id"], "objective: forked")
    assert events[0][1]["node_id"] == f"{f['thread_id']}:3"
    r = await client.post(f"/api/conversations/{tid}/fork", json={"from_turn": 9})
    assert r.status_code == 404


async def test_janitor_reclaims_stale_pending_branches(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    db = db_of(app)
    runtime = app.state.runtime
    # A crash between phases: phase 1 committed, the transcript written, never activated.
    stale = await add_branch_row(db, tid, BranchStatus.PENDING, age=timedelta(hours=2))
    fresh = await add_branch_row(db, tid, BranchStatus.PENDING)
    await seeding.seed_transcript(
        db, runtime, source_thread_id=tid, target_thread_id=stale, turn=1, kind="branch"
    )
    assert await runtime.raw_messages(stale) != []
    report = await janitor.run_once(db, runtime, max_age_seconds=600)
    assert stale in report.pending_branches and fresh not in report.pending_branches
    async with db.read() as s:
        assert await s.get(Conversation, stale) is None
        assert await s.get(Conversation, fresh) is not None
    assert await runtime.raw_messages(stale) == []
