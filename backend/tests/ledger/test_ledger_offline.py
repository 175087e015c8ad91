"""The offline model's provenance, failed and cancelled turns, and who made each
workspace change (the user by hand, the agent by its tools), on both databases."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
from fastapi import FastAPI

from haico.config import Settings
from haico.domain import NodeState
from haico.services.access import users
from haico.services.families import conversations
from tests.helpers import db_of
from tests.history_helpers import new_thread, turn_ok, wait_for_active_turn
from tests.sse_client import send_turn

API = "/api/conversations"


async def node(client: httpx.AsyncClient, tid: str, k: int) -> dict[str, Any]:
    r = await client.get(f"{API}/{tid}/nodes/{k}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_offline_model_reports_estimated_provenance(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: learn; todo: read")
    p = (await node(client, tid, 1))["provenance"]
    assert p["provider"] == "offline" and p["model"] == "haico-offline"
    assert p["tokens_estimated"] is True and p["input_tokens"] > 0 and p["output_tokens"] > 0
    assert p["tool_calls"] == 2 and p["cost_usd"] is None and p["duration_ms"] >= 0


async def test_a_cancelled_turn_keeps_what_it_measured(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    first = asyncio.create_task(send_turn(client, tid, "wait: 10"))
    await wait_for_active_turn(client, tid)
    r = await client.post(f"{API}/{tid}/turns/cancel")
    assert r.status_code == 200
    await first
    got = await node(client, tid, 1)
    assert got["state"] == NodeState.CANCELLED
    p = got["provenance"]
    assert p["provider"] == "offline" and p["duration_ms"] is not None and p["duration_ms"] >= 0


async def test_nodes_endpoint_errors(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    assert (await client.get(f"{API}/{tid}/nodes/1")).status_code == 404  # no turn yet
    await turn_ok(client, tid, "hello")
    assert (await client.get(f"{API}/{tid}/nodes/2")).status_code == 404
    assert (await client.get(f"{API}/th_{'0' * 32}/nodes/1")).status_code == 404
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    assert (await client.get(f"{API}/{foreign.thread_id}/nodes/1")).status_code == 403
    # a branch reaches its ancestors' nodes through its lineage
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": 1})
    bid = r.json()["thread_id"]
    assert (await node(client, bid, 1))["node_id"] == f"{tid}:1"
    # ... and a fork reaches the nodes it was forked from, provenance and all
    r = await client.post(f"{API}/{tid}/fork", json={"from_turn": 1})
    assert r.status_code == 201, r.text
    forked = await node(client, r.json()["thread_id"], 1)
    original = await node(client, tid, 1)
    assert forked["node_id"] == f"{tid}:1" and forked["provenance"] == original["provenance"]
    assert original["provenance"]["provider"] == "offline"


async def test_authorship_of_hand_and_agent_edits(
    client: httpx.AsyncClient, settings: Settings
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "todo: by the agent")
    await turn_ok(client, tid, "objective: second")
    # a todo added by hand at the tip belongs to the tip node (the snapshot rule)
    r = await client.post(f"{API}/{tid}/todos", json={"text": "by hand"})
    assert r.status_code == 201
    hand_uid = r.json()["uid"]

    first = (await node(client, tid, 1))["edits"]
    assert [(e["surface"], e["kind"], e["origin"]) for e in first] == [("todo", "add", "agent")]
    assert first[0]["author"] == "haico-offline"
    tip = (await node(client, tid, 2))["edits"]
    assert [(e["surface"], e["kind"], e["origin"], e["uid"]) for e in tip] == [
        ("objective", "change", "agent", None),
        ("todo", "add", "user", hand_uid),
    ]
    assert tip[1]["author"] == settings.local_user_name

    # compare marks who made each change on b's side
    cmp = (
        await client.get(f"{API}/{tid}/compare", params={"a": f"{tid}:1", "b": f"{tid}:2"})
    ).json()
    assert [(e["node_id"], e["surface"], e["origin"]) for e in cmp["edits"]] == [
        (f"{tid}:2", "objective", "agent"),
        (f"{tid}:2", "todo", "user"),
    ]
    assert [t["uid"] for t in cmp["todos"]["added"]] == [hand_uid]


async def test_edits_to_a_restored_view_belong_to_the_new_branchs_first_node(
    client: httpx.AsyncClient,
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    r = await client.post(f"{API}/{tid}/checkout", json={"turn_id": f"{tid}:1"})
    assert r.status_code == 200, r.text
    draft = r.json()["working_thread_id"]
    r = await client.put(f"{API}/{draft}/objective", json={"text": "by hand on the view"})
    assert r.status_code == 200
    events = await turn_ok(client, draft, "todo: then the agent")
    first = events[-1][1]["node_id"]
    assert first == f"{draft}:2"
    got = (await node(client, draft, 2))["edits"]
    assert [(e["surface"], e["origin"]) for e in got] == [("objective", "user"), ("todo", "agent")]
    # compare from the branch point marks both; the main path's node 2 has neither
    cmp = (await client.get(f"{API}/{tid}/compare", params={"a": f"{tid}:1", "b": first})).json()
    assert [(e["surface"], e["origin"]) for e in cmp["edits"]] == [
        ("objective", "user"),
        ("todo", "agent"),
    ]
    assert [(e["surface"], e["origin"]) for e in (await node(client, tid, 2))["edits"]] == [
        ("objective", "agent")
    ]
