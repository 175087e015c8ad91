"""Export and import of a family through the REST API, on both databases."""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.db.faults import Step
from haico.db.models import Conversation, SearchEntry, WorkspaceSnapshot
from haico.services.access import users
from haico.services.families import conversations
from tests.helpers import armed_faults, db_of
from tests.history_helpers import new_thread, turn_ok, workspace

API = "/api/conversations"
THREAD = re.compile(r"th_[0-9a-f]{32}")


async def _branch(client: httpx.AsyncClient, tid: str, k: int, reason: str) -> str:
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": k, "reason": reason})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def family_with_three_levels_and_a_fork(client: httpx.AsyncClient) -> dict[str, str]:
    """A fork F of S at 2, branched three levels deep (F -> B1 -> B2 -> B3)."""
    src = await new_thread(client, "Source")
    await turn_ok(client, src, "objective: essay; prefer: short; todo: outline")
    await turn_ok(client, src, "title: Draft; write: First paragraph.; prefer: formal")
    r = await client.post(f"{API}/{src}/fork", json={"from_turn": 2})
    assert r.status_code == 201, r.text
    fork = r.json()["thread_id"]
    await turn_ok(client, fork, "write: Second.; artifact Notes: n1; remove preference 1")
    await turn_ok(client, fork, "done todo 1; subtodo: intro")
    b1 = await _branch(client, fork, 3, "try a list")
    await client.patch(f"{API}/{b1}", json={"name": "list"})
    await turn_ok(client, b1, "replace document: - one\n- two; todo: check")
    b2 = await _branch(client, b1, 4, "deeper")
    await turn_ok(client, b2, "objective: deeper essay; lock preference 1")
    b3 = await _branch(client, b2, 5, "deepest")
    await turn_ok(client, b3, "remove todo 1; artifact Final: f")
    # a manual edit after the last turn lives only in the live rows
    await client.put(f"{API}/{b3}/objective", json={"text": "edited by hand"})
    return {"src": src, "fork": fork, "b1": b1, "b2": b2, "b3": b3}


def normalized(doc: dict[str, Any]) -> str:
    """The document with its own thread ids numbered in order of appearance, and its
    threads' titles without the mark an import gives them."""
    doc = {
        **doc,
        "threads": [{**t, "title": t["title"].removesuffix(" (imported)")} for t in doc["threads"]],
    }
    text = json.dumps({k: v for k, v in doc.items() if k != "exported_at"}, sort_keys=True)
    own = [t["thread_id"] for t in doc["threads"]]
    for i, tid in enumerate(own):
        text = text.replace(tid, f"T{i}")
    return text


async def _export(client: httpx.AsyncClient, tid: str) -> dict[str, Any]:
    r = await client.get(f"{API}/{tid}/export")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def _count(app: FastAPI, model: Any = Conversation) -> int:
    async with db_of(app).read() as s:
        return int(await s.scalar(select(func.count()).select_from(model)) or 0)


async def test_export_import_round_trip(app: FastAPI, client: httpx.AsyncClient) -> None:
    ids = await family_with_three_levels_and_a_fork(client)
    doc = await _export(client, ids["b2"])
    assert doc["format"] == "haico.family" and doc["version"] == 1
    assert doc["root_thread_id"] == ids["fork"]
    assert doc["forked_from"] == {"thread_id": ids["src"], "turn_index": 2}
    assert [t["thread_id"] for t in doc["threads"]] == [ids[k] for k in ("fork", "b1", "b2", "b3")]
    assert [(t["parent_thread_id"], t["branch_point_turn"]) for t in doc["threads"][1:]] == [
        (ids["fork"], 3),
        (ids["b1"], 4),
        (ids["b2"], 5),
    ]
    assert [n["id"] for n in doc["nodes"]] == [
        f"{ids['fork']}:3",
        f"{ids['fork']}:4",
        f"{ids['b1']}:4",
        f"{ids['b2']}:5",
        f"{ids['b3']}:6",
    ]
    node3 = doc["nodes"][0]
    assert node3["user_message"].startswith("write: Second.")
    assert any(m.get("tool_calls") for m in node3["messages"])
    assert [r["text"] for r in node3["workspace"]["rejected"]] == ["short"]
    assert [m["turn_index"] for m in doc["inherited_messages"] if m["role"] == "user"] == [1, 2]

    r = await client.post(f"{API}/import", json=doc)
    assert r.status_code == 201, r.text
    root = r.json()
    assert root["thread_id"] not in ids.values() and root["parent_thread_id"] is None
    assert root["forked_from"] == {"thread_id": ids["src"], "turn_index": 2}
    again = await _export(client, root["thread_id"])
    assert normalized(again) == normalized(doc)

    # the imported family works like the original: same graph, transcripts, as-of reads
    new = {
        k: t["thread_id"] for k, t in zip(("fork", "b1", "b2", "b3"), again["threads"], strict=True)
    }
    listed = {c["thread_id"]: c for c in (await client.get(API)).json()}
    assert listed[new["b1"]]["name"] == "list"
    old_msgs = (await client.get(f"{API}/{ids['b3']}/messages")).json()
    new_msgs = (await client.get(f"{API}/{new['b3']}/messages")).json()
    assert new_msgs == old_msgs
    for k in (2, 3, 4, 5, 6):
        old_ws = await workspace(client, ids["b3"], as_of=k)
        new_ws = await workspace(client, new["b3"], as_of=k)
        assert _without_ids(new_ws) == _without_ids(old_ws), k
    # and it goes on: a turn and a branch on the imported family
    await turn_ok(client, new["b3"], "objective: after import")
    assert (
        await client.post(f"{API}/{new['b2']}/branch", json={"from_turn": 5})
    ).status_code == 201
    # its nodes are searchable
    r = await client.get("/api/search", params={"q": "deeper"})
    assert any(h["root_thread_id"] == root["thread_id"] for h in r.json()["results"])


def _without_ids(ws: dict[str, Any]) -> dict[str, Any]:
    out = dict(ws)
    for key in ("preferences", "todos", "artifacts"):
        out[key] = [{k: v for k, v in item.items() if k != "id"} for item in ws[key]]
    return out


async def test_import_of_a_foreign_fork_keeps_only_the_fork_point(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    ids = await family_with_three_levels_and_a_fork(client)
    doc = await _export(client, ids["fork"])
    doc["forked_from"]["thread_id"] = f"th_{uuid.uuid4().hex}"  # not known here
    r = await client.post(f"{API}/import", json=doc)
    assert r.status_code == 201, r.text
    assert r.json()["forked_from"] is None
    again = await _export(client, r.json()["thread_id"])
    assert again["forked_from"] == {"thread_id": None, "turn_index": 2}
    assert len(again["nodes"]) == len(doc["nodes"])
    # below the fork point there is nothing to read from
    r = await client.get(f"{API}/{again['root_thread_id']}/workspace", params={"as_of_turn": 1})
    assert r.status_code == 409


@pytest.fixture
def faults(app: FastAPI) -> Iterator[dict[str, Any]]:
    with armed_faults(db_of(app), "step") as armed:
        yield armed


async def test_invalid_documents_create_nothing(
    app: FastAPI, client: httpx.AsyncClient, faults: dict[str, Any]
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one; prefer: p")
    bid = await _branch(client, tid, 1, "b")
    await turn_ok(client, bid, "objective: two")
    doc = await _export(client, tid)
    before = (
        await _count(app),
        await _count(app, WorkspaceSnapshot),
        await _count(app, SearchEntry),
    )

    def broken(change: Any) -> dict[str, Any]:
        copy = json.loads(json.dumps(doc))
        change(copy)
        return copy

    bad = [
        broken(lambda d: d.update(version=2)),  # a future version
        broken(lambda d: d.update(format="other")),
        broken(lambda d: d.update(threads=list(reversed(d["threads"])))),  # child first
        broken(lambda d: d["nodes"][0].update(turn_index=9)),
        broken(lambda d: d["threads"][1].update(branch_point_turn=7)),
        broken(lambda d: d["threads"][0].update(extra="field")),
        broken(lambda d: d.pop("threads")),
        broken(lambda d: d["nodes"][0]["messages"].append({"role": "robot", "content": ""})),
        broken(lambda d: d["threads"][0]["workspace"].update(objective="a\x00b")),
    ]
    for body in bad:
        r = await client.post(f"{API}/import", json=body)
        assert r.status_code == 422, (r.text, body.get("version"))
    r = await client.post(
        f"{API}/import", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 422
    r = await client.post(f"{API}/import", json=broken(lambda d: d.update(version=2)))
    assert "version" in r.json()["message"]
    # a failure at each phase removes everything it created
    for step in (Step.IMPORT_ROWS, Step.IMPORT_SEED, Step.IMPORT_ACTIVATE):
        faults["step"] = step
        r = await client.post(f"{API}/import", json=doc)
        assert r.status_code == 502, (step, r.text)
        assert r.json()["code"] == "seeding_failed"
    faults["step"] = None
    after = (
        await _count(app),
        await _count(app, WorkspaceSnapshot),
        await _count(app, SearchEntry),
    )
    assert after == before
    assert {Step.IMPORT_ROWS, Step.IMPORT_SEED, Step.IMPORT_ACTIVATE} <= set(faults["seen"])
    assert (await client.post(f"{API}/import", json=doc)).status_code == 201


async def test_export_ownership(app: FastAPI, client: httpx.AsyncClient) -> None:
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    assert (await client.get(f"{API}/{foreign.thread_id}/export")).status_code == 403
    assert (await client.get(f"{API}/th_{'2' * 32}/export")).status_code == 404
    # an empty conversation exports and imports too
    tid = await new_thread(client, "empty")
    doc = await _export(client, tid)
    assert doc["nodes"] == [] and doc["threads"][0]["start_workspace"] is None
    r = await client.post(f"{API}/import", json=doc)
    # an imported copy can be told from its original
    assert r.status_code == 201 and r.json()["title"] == "empty (imported)"
    assert THREAD.fullmatch(r.json()["thread_id"])


async def test_the_longest_titles_survive_a_fork_and_an_export(client: httpx.AsyncClient) -> None:
    """A fork's title gets its ` (fork)` suffix within the 500 characters a title may
    have, so the fork exports, and its export imports."""
    tid = await new_thread(client, "t" * 500)
    await turn_ok(client, tid, "objective: long titles")
    r = await client.post(f"{API}/{tid}/fork", json={"from_turn": 1})
    assert r.status_code == 201, r.text
    fork = r.json()
    doc = await _export(client, fork["thread_id"])
    assert len(fork["title"]) == 500 and fork["title"].endswith("t (fork)")
    assert doc["threads"][0]["title"] == fork["title"]
    r = await client.post(f"{API}/import", json=doc)
    imported = r.json()["title"]
    assert r.status_code == 201 and len(imported) == 500 and imported.endswith("t (imported)")


async def test_the_agent_cannot_write_a_title_past_the_cap(client: httpx.AsyncClient) -> None:
    """A document or artifact title longer than a title may be is refused by the tool
    (as the REST face refuses it) instead of being stored (SQLite) or failing in the
    database (PostgreSQL), and the family still exports."""
    tid = await new_thread(client, "long tool titles")
    events = await turn_ok(client, tid, f"title: {'x' * 501}; artifact {'y' * 501}: body")
    reply = events[-1][1]["reply"]
    assert reply.count("title: at most 500 characters") == 2, reply
    ws = await workspace(client, tid)
    assert ws["document"] is None and ws["artifacts"] == []
    await _export(client, tid)
