"""A merge made through REST reaches an AHP subscriber as a completed turn whose
message is a system notification naming its source, on both databases, over a real
WebSocket; a snapshot (and a turn rebuilt from its node alone) says the same. The undo
of a merge is one too, naming the merge node it undid (`haico/reverts`)."""

from __future__ import annotations

from datetime import UTC, datetime

from fastapi import FastAPI
from httpx import AsyncClient

from haico.ahp.adapter import turn_from
from haico.domain import MERGED_FROM_META, REVERTS_META, NodeKind, NodeState
from haico.services.turns.views import TurnRecord
from tests.ahp.live import chat_of, connected
from tests.history_helpers import checkout, live_server, new_thread, turn_ok


async def test_a_subscriber_sees_the_merge_turn(app: FastAPI, client: AsyncClient) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: one")
    r = await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
    side = r.json()["thread_id"]
    await turn_ok(client, side, "todo: from the side")
    assert (await checkout(client, root, f"{root}:1")).status_code == 200
    chat = chat_of(root)
    async with live_server(app) as base:
        c = await connected(base, chat)
        r = await client.post(
            f"/api/conversations/{root}/merge",
            json={"source": f"{side}:2", "mode": "merge", "label": "2.1"},
        )
        assert r.status_code == 201, r.text
        node = f"{root}:2"
        started = await c.wait_for(
            lambda e: e["action"]["type"] == "chat/turnStarted" and e["action"]["turnId"] == node
        )
        message = started["action"]["message"]
        assert message["origin"] == {"kind": "systemNotification"}
        assert message["_meta"][MERGED_FROM_META] == f"{side}:2"
        assert message["text"] == "Brought in from 2.1: 1 todo"
        assert started["action"]["parentTurnId"] == f"{root}:1"
        await c.wait_for(
            lambda e: e["action"]["type"] == "chat/turnComplete" and e["action"]["turnId"] == node
        )
        state = (await c.request("subscribe", {"channel": chat}))["snapshot"]["state"]
        turn = state["turns"][node]
        assert turn["message"]["origin"] == {"kind": "systemNotification"}
        assert turn["state"] == "complete" and state["headTurnId"] == node

        r = await client.post(f"/api/conversations/{root}/merge/2/revert", json={})
        assert r.status_code == 201, r.text
        undo = f"{root}:3"
        started = await c.wait_for(
            lambda e: e["action"]["type"] == "chat/turnStarted" and e["action"]["turnId"] == undo
        )
        message = started["action"]["message"]
        assert message["origin"] == {"kind": "systemNotification"}
        assert message["_meta"] == {REVERTS_META: node}
        assert message["text"] == "Undid step 2: Brought in from 2.1: 1 todo"
        assert started["action"]["parentTurnId"] == node
        assert not c.invalid  # every message validated against the AHP schemas
        await c.close()


def test_a_merge_turn_rebuilt_from_its_node_is_a_system_notification() -> None:
    """Once its actions left the log window, a turn is rebuilt from its node record."""
    at = datetime(2026, 1, 1, tzinfo=UTC)
    record = TurnRecord(
        id="th_a:2",
        parent_id="th_a:1",
        order=2,
        state=NodeState.COMPLETE,
        user_message="Brought in from 2.1: 1 todo",
        reply="",
        started_at=at,
        completed_at=at,
        merged_from="th_b:2",
    )
    turn = turn_from(record, [])
    assert turn["message"] == {
        "text": "Brought in from 2.1: 1 todo",
        "origin": {"kind": "systemNotification"},
        "_meta": {MERGED_FROM_META: "th_b:2"},
    }
    plain = turn_from(TurnRecord(**{**record.__dict__, "merged_from": None}), [])
    assert plain["message"]["origin"] == {"kind": "user"}


def test_a_revert_turn_rebuilt_from_its_node_names_the_merge_it_undid() -> None:
    at = datetime(2026, 1, 1, tzinfo=UTC)
    record = TurnRecord(
        id="th_a:3",
        parent_id="th_a:2",
        order=3,
        state=NodeState.COMPLETE,
        user_message="Undid step 2: Brought in from 2.1: 1 todo",
        reply="",
        started_at=at,
        completed_at=at,
        merged_from="th_a:2",
        kind=NodeKind.REVERT,
    )
    turn = turn_from(record, [])
    assert turn["message"]["origin"] == {"kind": "systemNotification"}
    assert turn["message"]["_meta"] == {REVERTS_META: "th_a:2"}
