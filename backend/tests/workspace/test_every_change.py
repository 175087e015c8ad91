"""Every committed change is an action; checkout to the head; forks keep their past."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import jsonschema
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.models import ActionLogEntry
from tests.helpers import db_of
from tests.history_helpers import (
    actions,
    checkout,
    graph,
    has_action,
    history,
    live_server,
    read_events,
    thread_with_turns,
    turn_ok,
    workspace,
)

SCHEMA = json.loads(
    (
        Path(__file__).parents[2] / "haico/events/schemas/haico-workspaceChanged.schema.json"
    ).read_text()
)


async def _logged(app: FastAPI, root: str, kind: str) -> list[dict[str, Any]]:
    async with db_of(app).read() as s:
        rows = await s.execute(
            select(ActionLogEntry.action)
            .where(ActionLogEntry.root_thread_id == root)
            .order_by(ActionLogEntry.seq)
        )
        return [a for a in rows.scalars() if a["type"] == kind]


async def test_rest_edits_reach_followers_as_workspace_changed(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    base = f"/api/conversations/{tid}"
    async with live_server(app) as url:
        ready = asyncio.Event()
        follower = asyncio.create_task(
            read_events(
                url,
                tid,
                until=has_action("haico/workspaceChanged", change="removed"),
                ready=ready,
            )
        )
        await asyncio.wait_for(ready.wait(), 10)
        await client.put(f"{base}/objective", json={"text": "bike lanes"})
        await client.put(f"{base}/document", json={"title": "T", "content": "Body."})
        pref = (await client.post(f"{base}/preferences", json={"text": "short"})).json()
        await client.patch(f"{base}/preferences/{pref['id']}", json={"locked": True})
        todo = (await client.post(f"{base}/todos", json={"text": "outline"})).json()
        await client.patch(f"{base}/todos/{todo['id']}", json={"done": True})
        r = await client.delete(f"{base}/todos/{todo['id']}")
        assert r.status_code == 204
        events = await follower
    changes = actions(events, "haico/workspaceChanged")
    assert [(c["surfaces"], c["change"]) for c in changes] == [
        (["objective"], "set"),
        (["document"], "set"),
        (["preferences"], "added"),
        (["preferences"], "updated"),
        (["todos"], "added"),
        (["todos"], "updated"),
        (["todos"], "removed"),
    ]
    assert all(c["threadId"] == tid for c in changes)
    assert changes[0]["item"] == {"text": "bike lanes"}
    assert changes[1]["item"] == {"title": "T", "content": "Body."}
    assert changes[3]["item"]["locked"] is True and changes[3]["item"]["uid"] == pref["uid"]
    assert changes[6]["item"] == {"id": todo["id"], "uid": todo["uid"]}
    for change in changes:
        jsonschema.validate(change, SCHEMA)


async def test_agent_tool_edits_log_the_same_action(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    events = await turn_ok(
        client, tid, "objective: cycling; prefer: data first; todo: survey; artifact Notes: n"
    )
    logged = await _logged(app, tid, "haico/workspaceChanged")
    assert [c["surfaces"][0] for c in logged] == ["objective", "preferences", "todos", "artifacts"]
    for change in logged:
        jsonschema.validate(change, SCHEMA)
    # The sender's stream is derived from the same actions: one workspace_changed each.
    sent = [d["surfaces"] for name, d in events if name == "workspace_changed"]
    assert sent == [c["surfaces"] for c in logged]
    calls = [d["name"] for name, d in events if name == "tool_call"]
    parts = await _logged(app, tid, "chat/responsePart")
    tool_parts = [
        p["part"]["toolCall"]["toolName"] for p in parts if p["part"]["kind"] == "toolCall"
    ]
    assert calls == tool_parts and len(calls) == 4


async def test_checkout_to_the_head_restores_it(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await thread_with_turns(client, 3)
    r = await checkout(client, tid, f"{tid}:2")
    draft = r.json()["working_thread_id"]
    restored = await workspace(client, draft)
    # edit the restored view, then check out the same node (the head)
    await client.put(f"/api/conversations/{draft}/objective", json={"text": "edited"})
    r = await checkout(client, tid, f"{tid}:2")
    assert r.status_code == 409 and r.json()["code"] == "checkout_would_discard_changes"
    assert (await workspace(client, draft))["objective"] == "edited"
    r = await checkout(client, tid, f"{tid}:2", force=True)
    assert r.status_code == 200 and r.json()["head_turn_id"] == f"{tid}:2"
    again = await workspace(client, r.json()["working_thread_id"])
    assert again["objective"] == restored["objective"] == "step 2"
    # at a real thread's tip there is nothing to lose: 200, same state
    r = await checkout(client, tid, f"{tid}:3")
    r2 = await checkout(client, tid, f"{tid}:3", expected_head_turn_id=f"{tid}:3")
    assert r2.status_code == 200 and r2.json()["working_thread_id"] == tid


async def test_fork_reads_below_its_fork_point_come_from_the_source(
    client: httpx.AsyncClient,
) -> None:
    tid = await thread_with_turns(client, 3)
    fork = (await client.post(f"/api/conversations/{tid}/fork", json={"from_turn": 2})).json()
    fid = fork["thread_id"]
    # the fork's live workspace moves on; its past must not
    await client.put(f"/api/conversations/{fid}/objective", json={"text": "fork's own"})
    for k in (0, 1):
        mine = await client.get(f"/api/conversations/{fid}/workspace", params={"as_of_turn": k})
        source = await client.get(f"/api/conversations/{tid}/workspace", params={"as_of_turn": k})
        assert mine.status_code == 200, mine.text
        assert mine.json()["objective"] == source.json()["objective"] != "fork's own"
    at_fork = await client.get(f"/api/conversations/{fid}/workspace", params={"as_of_turn": 2})
    assert at_fork.json()["objective"] == "fork's own"  # turn 2 is the fork's start: live
    b = await client.post(f"/api/conversations/{fid}/branch", json={"from_turn": 1})
    assert b.status_code == 201, b.text
    assert (await workspace(client, b.json()["thread_id"]))["objective"] == "step 1"
    # history and graph agree on the fork's head
    await turn_ok(client, fid, "todo: on the fork")
    assert (await history(client, fid))["head_turn_id"] == (await graph(client, fid))[
        "head_turn_id"
    ]
    # the source gone, the past cannot be answered: 409, never the live rows
    assert (await client.delete(f"/api/conversations/{tid}")).status_code == 204
    gone = await client.get(f"/api/conversations/{fid}/workspace", params={"as_of_turn": 1})
    assert gone.status_code == 409 and gone.json()["code"] == "snapshot_missing"
