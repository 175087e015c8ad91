"""Linear hosts (`history_retains_branches=false`): continuing from an earlier node
prunes every node that left the selected path, on both storage backends."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.models import Artifact, WorkspaceSnapshot
from tests.helpers import db_of
from tests.history_helpers import (
    actions,
    checkout,
    draft_ids,
    family_thread_ids,
    graph,
    has_action,
    live_server,
    read_events,
    thread_with_turns,
    turn_ok,
    workspace,
)
from tests.history_helpers import history as get_history


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"history_retains_branches": False}


async def _snapshot_turns(app: FastAPI, thread_id: str) -> list[int]:
    async with db_of(app).read() as s:
        rows = await s.execute(
            select(WorkspaceSnapshot.turn_index).where(WorkspaceSnapshot.thread_id == thread_id)
        )
        return sorted(int(k) for k in rows.scalars())


async def _artifact_turns(app: FastAPI, thread_id: str) -> list[int]:
    async with db_of(app).read() as s:
        rows = await s.execute(select(Artifact.turn_index).where(Artifact.thread_id == thread_id))
        return sorted(int(k) for k in rows.scalars())


def _user_turns(messages: list[Any]) -> int:
    return sum(1 for m in messages if m.type == "human")


async def _pruned(app: FastAPI, tid: str, count: int = 1) -> list[list[str]]:
    """The first `count` `chat/turnsPruned` actions of the family, replayed from the log."""
    async with live_server(app) as url:
        events = await read_events(
            url, tid, until=lambda ev: len(actions(ev, "chat/turnsPruned")) >= count
        )
    return [sorted(a["turnIds"]) for a in actions(events, "chat/turnsPruned")]


async def _node_ids(client: httpx.AsyncClient, tid: str) -> set[str]:
    return {n["id"] for n in (await graph(client, tid))["nodes"]}


async def test_history_advertises_a_linear_host(client: httpx.AsyncClient) -> None:
    tid = await thread_with_turns(client, 1)
    assert (await get_history(client, tid))["retains_branches"] is False


async def test_continuing_prunes_every_abandoned_node(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await thread_with_turns(client, 2)
    await turn_ok(client, tid, "artifact Notes: three")
    await turn_ok(client, tid, "artifact More: four")
    runtime = app.state.runtime
    # continuing on a branch at T:3 prunes T:4 already
    b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 3})).json()
    bid = b["thread_id"]
    await turn_ok(client, bid, "objective: branch b")
    assert await _snapshot_turns(app, tid) == [1, 2, 3]
    assert await _artifact_turns(app, tid) == [3]
    assert _user_turns(await runtime.raw_messages(tid)) == 3
    assert await _pruned(app, tid) == [[f"{tid}:4"]]
    # an empty branch hanging from T:3, and one from the kept T:2
    empty = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 3})).json()
    kept = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 2})).json()
    assert _user_turns(await runtime.raw_messages(bid)) == 4
    # checking out does not prune anything yet
    draft = (await checkout(client, tid, f"{tid}:2")).json()["working_thread_id"]
    assert {f"{tid}:3", f"{bid}:4"} <= await _node_ids(client, tid)
    events = await turn_ok(client, draft, "objective: new future")
    assert events[0][1] == {
        "turn_index": 3,
        "node_id": f"{draft}:3",
        "parent_node_id": f"{tid}:2",
    }
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{draft}:3" and h["working_thread_id"] == draft
    # removed: T:3 with its artifact, the branch's node and the branch below T:3
    assert await _snapshot_turns(app, tid) == [1, 2]
    assert await _artifact_turns(app, tid) == []
    assert await _snapshot_turns(app, draft) == [3]
    family = await family_thread_ids(app, tid)
    assert bid not in family and empty["thread_id"] not in family
    assert kept["thread_id"] in family
    for gone in (bid, empty["thread_id"]):
        assert (await client.get(f"/api/conversations/{gone}")).status_code == 404
        assert await runtime.raw_messages(gone) == []
    # the root's transcript is cut back to the selected path; the draft's is whole
    assert _user_turns(await runtime.raw_messages(tid)) == 2
    assert _user_turns(await runtime.raw_messages(draft)) == 3
    assert await _node_ids(client, tid) == {f"{tid}:1", f"{tid}:2", f"{draft}:3"}
    assert await _node_ids(client, draft) == {f"{tid}:1", f"{tid}:2", f"{draft}:3"}
    assert await _pruned(app, tid, 2) == [[f"{tid}:4"], sorted([f"{tid}:3", f"{bid}:4"])]
    ws = await workspace(client, draft)
    assert ws["objective"] == "new future" and ws["artifacts"] == []
    assert await draft_ids(app, tid) == []
    # the kept nodes can still be checked out, with their workspace
    r = await checkout(client, tid, f"{tid}:2")
    assert r.status_code == 200, r.text
    ws = await workspace(client, r.json()["working_thread_id"])
    assert ws["objective"] == "step 2" and [t["text"] for t in ws["todos"]] == ["t1", "t2"]
    assert (await workspace(client, tid, as_of=2))["objective"] == "step 2"


async def test_clocks_never_go_backwards(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await thread_with_turns(client, 3)
    seen: set[str] = {f"{tid}:{k}" for k in (1, 2, 3)}
    d1 = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await turn_ok(client, d1, "objective: d1")
    seen.add(f"{d1}:2")
    # the root keeps its clock even though its turns 2 and 3 are gone
    assert (await client.get(f"/api/conversations/{tid}")).json()["turn_index"] == 3
    r = await checkout(client, tid, f"{tid}:1")
    assert r.status_code == 200, r.text
    d2 = r.json()["working_thread_id"]
    events = await turn_ok(client, d2, "objective: d2")
    node = events[0][1]["node_id"]
    assert node == f"{d2}:2" and node not in seen
    seen.add(node)
    events = await turn_ok(client, d2, "objective: d2 again")
    assert events[0][1]["node_id"] == f"{d2}:3" and f"{d2}:3" not in seen
    assert await _node_ids(client, tid) == {f"{tid}:1", f"{d2}:2", f"{d2}:3"}
    r = await checkout(client, tid, f"{d1}:2")
    assert r.status_code == 404  # pruned nodes cannot be checked out


async def test_continuing_from_the_baseline_keeps_the_root(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await thread_with_turns(client, 2)
    draft = (await checkout(client, tid, None)).json()["working_thread_id"]
    events = await turn_ok(client, draft, "objective: from scratch")
    assert events[0][1] == {"turn_index": 1, "node_id": f"{draft}:1", "parent_node_id": None}
    # the family (and its root, which names it) survives with the new path only
    assert (await client.get(f"/api/conversations/{tid}")).status_code == 200
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{draft}:1" and h["working_thread_id"] == draft
    assert await _node_ids(client, draft) == {f"{draft}:1"}
    assert await app.state.runtime.raw_messages(tid) == []
    await turn_ok(client, draft, "objective: onwards")
    assert (await get_history(client, draft))["head_turn_id"] == f"{draft}:2"


async def test_forked_nodes_are_never_pruned(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await thread_with_turns(client, 4)
    # a fork from the future node T:3 protects it and its ancestors
    r = await client.post(f"/api/conversations/{tid}/fork", json={"from_turn": 3})
    assert r.status_code == 201, r.text
    fork = r.json()["thread_id"]
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await turn_ok(client, draft, "objective: elsewhere")
    nodes = await _node_ids(client, tid)
    assert {f"{tid}:1", f"{tid}:2", f"{tid}:3", f"{draft}:2"} <= nodes
    assert f"{tid}:4" not in nodes
    assert await _snapshot_turns(app, tid) == [1, 2, 3]
    assert _user_turns(await app.state.runtime.raw_messages(tid)) == 3
    assert await _pruned(app, tid) == [[f"{tid}:4"]]
    # the fork is untouched, and the protected nodes can still be checked out
    assert (await client.get(f"/api/conversations/{fork}")).status_code == 200
    r = await checkout(client, tid, f"{tid}:3", force=True)
    assert r.status_code == 200, r.text
    ws = await workspace(client, r.json()["working_thread_id"])
    assert ws["objective"] == "step 3"
    r = await checkout(client, tid, f"{tid}:2", force=True)
    assert r.status_code == 200, r.text
    assert (await workspace(client, r.json()["working_thread_id"]))["objective"] == "step 2"


async def test_linear_continuation_on_the_tip_prunes_nothing(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await thread_with_turns(client, 2)
    await turn_ok(client, tid, "objective: three")
    async with live_server(app) as url:
        events = await read_events(
            url, tid, until=has_action("chat/turnComplete", turnId=f"{tid}:3")
        )
    assert actions(events, "chat/turnsPruned") == []
    assert await _snapshot_turns(app, tid) == [1, 2, 3]


async def test_posting_to_a_cut_back_thread_continues_through_a_draft(
    client: httpx.AsyncClient,
) -> None:
    """The root lost turns 2-3 to pruning but keeps clock 3; posting to it continues
    from its last retained node on a new thread, never reusing a pruned id."""
    tid = await thread_with_turns(client, 3)
    d1 = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await turn_ok(client, d1, "objective: d1")
    events = await turn_ok(client, tid, "objective: back on the root")
    started = events[0][1]
    assert started["parent_node_id"] == f"{tid}:1" and started["turn_index"] == 2
    assert not started["node_id"].startswith(tid) and started["node_id"] != f"{d1}:2"
    hist = await get_history(client, tid)
    assert hist["head_turn_id"] == started["node_id"]
    assert await _node_ids(client, tid) == {f"{tid}:1", started["node_id"]}
