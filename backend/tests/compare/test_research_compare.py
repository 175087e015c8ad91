"""Branch names, the decision map and compare, through the REST API on both databases."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select, update

from haico.db.models import ActionLogEntry, WorkspaceSnapshot
from haico.services.access import users
from haico.services.families import conversations
from tests.helpers import db_of
from tests.history_helpers import new_thread, turn_ok, workspace

API = "/api/conversations"


async def _compare(client: httpx.AsyncClient, tid: str, a: str, b: str) -> dict[str, Any]:
    r = await client.get(f"{API}/{tid}/compare", params={"a": a, "b": b})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def _branch(client: httpx.AsyncClient, tid: str, k: int) -> str:
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": k})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


# ---- branch names ----


async def test_branch_name_set_shown_and_cleared(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await new_thread(client, "Essay")
    await turn_ok(client, tid, "objective: one")
    bid = await _branch(client, tid, 1)
    assert (await client.get(f"{API}/{bid}")).json()["name"] is None

    r = await client.patch(f"{API}/{bid}", json={"name": "  formal tone "})
    assert r.status_code == 200, r.text
    assert r.json()["name"] == "formal tone" and r.json()["title"] == "Essay"
    listed = {c["thread_id"]: c for c in (await client.get(API)).json()}
    assert listed[bid]["name"] == "formal tone"
    graph = (await client.get(f"{API}/{tid}/graph")).json()
    names = {t["thread_id"]: t["name"] for t in graph["threads"]}
    assert names == {tid: None, bid: "formal tone"}
    # the change reaches followers as haico/threadChanged
    async with db_of(app).read() as s:
        logged = (
            (await s.execute(select(ActionLogEntry.action).order_by(ActionLogEntry.seq.desc())))
            .scalars()
            .first()
        )
    assert logged == {
        "type": "haico/threadChanged",
        "threadId": bid,
        "change": "renamed",
        "title": "Essay",
        "name": "formal tone",
        "author": app.state.local_user.name,  # catalogue actions name who made them
    }

    # a title alone leaves the name; null clears it
    r = await client.patch(f"{API}/{bid}", json={"title": "Essay 2"})
    assert r.json()["name"] == "formal tone" and r.json()["title"] == "Essay 2"
    r = await client.patch(f"{API}/{bid}", json={"name": None})
    assert r.status_code == 200 and r.json()["name"] is None
    assert (await client.get(f"{API}/{bid}")).json()["name"] is None


async def test_branch_name_validation_and_ownership(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await new_thread(client)
    r = await client.patch(f"{API}/{tid}", json={"name": "x" * 81})
    assert r.status_code == 422
    r = await client.patch(f"{API}/{tid}", json={"name": 5})
    assert r.status_code == 422
    assert (await client.patch(f"{API}/{tid}", json={"name": "x" * 80})).status_code == 200
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    r = await client.patch(f"{API}/{foreign.thread_id}", json={"name": "mine"})
    assert r.status_code == 403
    r = await client.patch(f"{API}/th_{'0' * 32}", json={"name": "mine"})
    assert r.status_code == 404


# ---- the decision map ----


async def test_deleted_items_become_rejected_decisions(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "prefer: short; prefer: formal; todo: outline; todo: sources")
    ws = await workspace(client, tid)
    assert ws["rejected"] == []
    short, formal = ws["preferences"]
    sources = ws["todos"][1]
    # the agent removes one (through the same path as REST) during turn 2
    await turn_ok(client, tid, "remove preference 1")
    # the user removes another between turns 2 and 3
    r = await client.delete(f"{API}/{tid}/todos/{sources['id']}")
    assert r.status_code == 204
    await turn_ok(client, tid, "objective: three")

    ws = await workspace(client, tid)
    assert [p["uid"] for p in ws["preferences"]] == [formal["uid"]]
    assert [t["text"] for t in ws["todos"]] == ["outline"]
    assert ws["rejected"] == [
        {"uid": short["uid"], "surface": "preference", "text": "short", "rejected_after_turn": 2},
        {"uid": sources["uid"], "surface": "todo", "text": "sources", "rejected_after_turn": 2},
    ]
    # as-of reads list only what had been rejected by then
    assert (await workspace(client, tid, as_of=1))["rejected"] == []
    at2 = await workspace(client, tid, as_of=2)
    assert [r["uid"] for r in at2["rejected"]] == [short["uid"], sources["uid"]]
    assert [p["uid"] for p in at2["preferences"]] == [formal["uid"]]

    # copies carry them: a branch at 2 and a fork at 3; a branch at 1 has none
    at_two = await workspace(client, await _branch(client, tid, 2))
    assert at_two["rejected"] == ws["rejected"]
    assert (await workspace(client, await _branch(client, tid, 1)))["rejected"] == []
    fork = (await client.post(f"{API}/{tid}/fork", json={"from_turn": 3})).json()
    assert (await workspace(client, fork["thread_id"]))["rejected"] == ws["rejected"]
    # a checkout to node 2 (a draft) carries them too
    r = await client.post(f"{API}/{tid}/checkout", json={"turn_id": f"{tid}:2"})
    assert r.status_code == 200, r.text
    draft = r.json()["working_thread_id"]
    assert draft != tid
    assert (await workspace(client, draft))["rejected"] == ws["rejected"]


async def test_snapshot_from_before_the_field_reads_with_defaults(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "prefer: short; todo: outline")
    await turn_ok(client, tid, "remove todo 1; objective: two")
    await turn_ok(client, tid, "objective: three")
    expected = await workspace(client, tid, as_of=2)
    assert len(expected["rejected"]) == 1
    # Make snapshot 3 (the workspace after turn 2) a format-2 row: no `rejected`.
    async with db_of(app).transaction() as s:
        await s.execute(
            update(WorkspaceSnapshot)
            .where(WorkspaceSnapshot.thread_id == tid, WorkspaceSnapshot.turn_index == 3)
            .values(format=2, rejected=None)
        )
    old = await workspace(client, tid, as_of=2)
    assert old["rejected"] == []
    assert {k: v for k, v in old.items() if k != "rejected"} == {
        k: v for k, v in expected.items() if k != "rejected"
    }
    # a branch from it and compare both read it the same way
    bid = await _branch(client, tid, 2)
    assert (await workspace(client, bid))["rejected"] == []
    cmp = await _compare(client, tid, f"{tid}:2", f"{tid}:3")
    assert cmp["rejected"]["a"] == [] and cmp["objective"]["after"] == "three"
    assert cmp["todos"] == {"added": [], "removed": [], "changed": []}


# ---- compare ----


async def test_compare_siblings(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: base; title: Doc; write: Line one.; prefer: short")
    await turn_ok(client, tid, "todo: outline; todo: sources")
    await turn_ok(client, tid, "write: Line two.; lock preference 1; done todo 1; remove todo 2")
    bid = await _branch(client, tid, 2)
    await turn_ok(
        client, bid, "objective: other; replace document: Line one changed.; artifact N: n"
    )
    await turn_ok(client, bid, "subtodo: deeper; prefer: formal")

    cmp = await _compare(client, tid, f"{tid}:3", f"{bid}:4")
    assert cmp["a"] == {
        "node_id": f"{tid}:3",
        "thread_id": tid,
        "root_thread_id": tid,
        "turn_index": 3,
    }
    assert cmp["b"]["node_id"] == f"{bid}:4" and cmp["b"]["root_thread_id"] == tid
    assert cmp["common_ancestor"]["node_id"] == f"{tid}:2"
    assert cmp["objective"] == {"before": "base", "after": "other", "changed": True}
    doc = cmp["document"]
    assert doc["changed"] and doc["title_before"] == doc["title_after"] == "Doc"
    assert doc["added_lines"] == 1 and doc["removed_lines"] == 3
    assert "+Line one changed." in doc["diff"] and "-Line two." in doc["diff"]
    assert doc["diff"].startswith(f"--- {tid}:3\n+++ {bid}:4")
    prefs = cmp["preferences"]
    assert [p["text"] for p in prefs["added"]] == ["formal"]
    assert prefs["removed"] == []
    assert [
        (c["before"]["locked"], c["after"]["locked"], c["fields"]) for c in prefs["changed"]
    ] == [(True, False, ["locked"])]
    todos = cmp["todos"]
    # sources was removed (rejected) on a's side only: b still has it
    assert [t["text"] for t in todos["added"]] == ["sources", "deeper"]
    assert [(c["after"]["text"], c["fields"]) for c in todos["changed"]] == [("outline", ["done"])]
    assert [t["text"] for t in todos["removed"]] == []
    assert [a["title"] for a in cmp["artifacts"]["added"]] == ["N"]
    assert cmp["artifacts"]["removed"] == []
    assert [r["text"] for r in cmp["rejected"]["a"]] == ["sources"]
    assert cmp["rejected"]["b"] == []

    # the other way round mirrors it
    back = await _compare(client, tid, f"{bid}:4", f"{tid}:3")
    assert [p["text"] for p in back["preferences"]["removed"]] == ["formal"]
    assert [a["title"] for a in back["artifacts"]["removed"]] == ["N"]
    assert back["document"]["added_lines"] == 3 and back["document"]["removed_lines"] == 1


async def test_compare_node_with_itself_and_its_ancestor(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one; write: a; prefer: p; todo: t; artifact A: x")
    await turn_ok(client, tid, "write: b")
    cmp = await _compare(client, tid, f"{tid}:2", f"{tid}:2")
    assert cmp["common_ancestor"]["node_id"] == f"{tid}:2"
    assert cmp["objective"]["changed"] is False
    assert cmp["document"] == {
        "title_before": "",
        "title_after": "",
        "changed": False,
        "diff": "",
        "added_lines": 0,
        "removed_lines": 0,
    }
    for surface in ("preferences", "todos"):
        assert cmp[surface] == {"added": [], "removed": [], "changed": []}
    assert cmp["artifacts"] == {"added": [], "removed": []}

    down = await _compare(client, tid, f"{tid}:1", f"{tid}:2")
    assert down["common_ancestor"]["node_id"] == f"{tid}:1"
    assert down["document"]["added_lines"] == 2 and down["document"]["removed_lines"] == 0


async def test_compare_across_a_fork(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one; prefer: keep")
    await turn_ok(client, tid, "objective: two")
    await turn_ok(client, tid, "objective: three")
    fork = (await client.post(f"{API}/{tid}/fork", json={"from_turn": 2})).json()["thread_id"]
    await turn_ok(client, fork, "objective: forked; prefer: new")
    cmp = await _compare(client, fork, f"{tid}:3", f"{fork}:3")
    assert cmp["b"]["root_thread_id"] == fork and cmp["a"]["root_thread_id"] == tid
    assert cmp["common_ancestor"] == {
        "node_id": f"{tid}:2",
        "thread_id": tid,
        "root_thread_id": tid,
        "turn_index": 2,
    }
    assert cmp["objective"] == {"before": "three", "after": "forked", "changed": True}
    # the copied preference keeps its uid across the fork: not added, not removed
    assert [p["text"] for p in cmp["preferences"]["added"]] == ["new"]
    assert cmp["preferences"]["removed"] == []


async def test_compare_errors(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    url = f"{API}/{tid}/compare"
    r = await client.get(url, params={"a": "nope", "b": f"{tid}:1"})
    assert r.status_code == 422
    assert (await client.get(url, params={"a": f"{tid}:1"})).status_code == 422
    r = await client.get(url, params={"a": f"{tid}:1", "b": f"{tid}:9"})
    assert r.status_code == 404
    r = await client.get(url, params={"a": f"{tid}:1", "b": f"th_{'1' * 32}:1"})
    assert r.status_code == 404
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    r = await client.get(url, params={"a": f"{tid}:1", "b": f"{foreign.thread_id}:0"})
    assert r.status_code == 403
    r = await client.get(
        f"{API}/{foreign.thread_id}/compare", params={"a": f"{tid}:1", "b": f"{tid}:1"}
    )
    assert r.status_code == 403
    # a deleted thread's nodes are gone
    other = await new_thread(client)
    await turn_ok(client, other, "objective: x")
    await client.delete(f"{API}/{other}")
    r = await client.get(url, params={"a": f"{tid}:1", "b": f"{other}:1"})
    assert r.status_code == 404
