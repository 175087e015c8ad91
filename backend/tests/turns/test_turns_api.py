"""Turns through the REST API: SSE order, tool edits, the snapshot rule, 409, cancel."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from haico.db.faults import Step
from haico.db.models import ActiveTurn
from haico.domain import NodeState, now
from haico.events import log as action_log
from tests.helpers import armed_faults, db_of
from tests.history_helpers import wait_for_active_turn
from tests.sse_client import send_turn


@pytest.fixture
async def tid(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={"title": "T"})
    return str(r.json()["thread_id"])


async def test_turn_streams_events_in_order(client: httpx.AsyncClient, tid: str) -> None:
    status, events, _ = await send_turn(
        client, tid, "objective: Write a sonnet; todo: draft octave; prefer: iambic"
    )
    assert status == 200
    names = [n for n, _ in events]
    assert names[0] == "turn_started" and names[-1] == "turn_completed"
    assert events[0][1] == {"turn_index": 1, "node_id": f"{tid}:1", "parent_node_id": None}
    calls = [d["name"] for n, d in events if n == "tool_call"]
    assert len(calls) == 3
    changed = {s for n, d in events if n == "workspace_changed" for s in d["surfaces"]}
    assert {"objective", "todos", "preferences"} <= changed
    done = events[-1][1]
    assert done["node_id"] == f"{tid}:1" and done["turn_index"] == 1 and done["reply"]
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert ws["objective"] == "Write a sonnet"
    assert [t["text"] for t in ws["todos"]] == ["draft octave"]
    assert [p["text"] for p in ws["preferences"]] == ["iambic"]
    conv = (await client.get(f"/api/conversations/{tid}")).json()
    assert conv["turn_index"] == 1 and conv["message_count"] == 2


async def test_plain_message_streams_several_tokens(client: httpx.AsyncClient, tid: str) -> None:
    _, events, _ = await send_turn(client, tid, "hello there, what do we have?")
    tokens = [d["text"] for n, d in events if n == "token"]
    assert len(tokens) > 3
    assert "".join(tokens) == events[-1][1]["reply"]
    _, events, _ = await send_turn(client, tid, "and now?")
    assert events[0][1]["parent_node_id"] == f"{tid}:1"


async def test_snapshot_rule_with_manual_edits(client: httpx.AsyncClient, tid: str) -> None:
    await send_turn(client, tid, "objective: A")
    await client.put(f"/api/conversations/{tid}/objective", json={"text": "B (manual)"})
    await send_turn(client, tid, "objective: C")

    async def as_of(k: int) -> object:
        r = await client.get(f"/api/conversations/{tid}/workspace", params={"as_of_turn": k})
        assert r.status_code == 200
        return r.json()["objective"]

    assert await as_of(0) is None  # snapshot 1: before turn 1 acted
    assert await as_of(1) == "B (manual)"  # snapshot 2 absorbed the manual edit
    assert await as_of(2) == "C"  # latest turn: the live rows
    r = await client.get(f"/api/conversations/{tid}/workspace", params={"as_of_turn": 3})
    assert r.status_code == 404


async def test_artifact_is_stamped_with_its_turn(client: httpx.AsyncClient, tid: str) -> None:
    await send_turn(client, tid, "hello")
    await send_turn(client, tid, "artifact Plan: step one, step two")
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    (art,) = ws["artifacts"]
    assert art["turn_index"] == 2 and art["title"] == "Plan"
    full = (await client.get(f"/api/conversations/{tid}/artifacts/{art['id']}")).json()
    assert "step one" in full["content"]
    before = (await client.get(f"/api/conversations/{tid}/workspace?as_of_turn=1")).json()
    assert before["artifacts"] == []


async def test_second_send_during_a_turn_is_409(client: httpx.AsyncClient, tid: str) -> None:
    first = asyncio.create_task(send_turn(client, tid, "wait: 2"))
    await wait_for_active_turn(client, tid)
    status, _, body = await send_turn(client, tid, "objective: too soon")
    assert status == 409 and body["code"] == "turn_in_progress"
    # a branch-free sibling request in the same family is refused the same way
    status, events, _ = await first
    assert events[-1][0] == "turn_completed"
    status, events, _ = await send_turn(client, tid, "objective: now")
    assert status == 200 and events[-1][0] == "turn_completed"


async def test_cancel_records_a_cancelled_node(client: httpx.AsyncClient, tid: str) -> None:
    first = asyncio.create_task(send_turn(client, tid, "wait: 10"))
    await wait_for_active_turn(client, tid)
    r = await client.post(f"/api/conversations/{tid}/turns/cancel")
    assert r.status_code == 200
    assert r.json() == {"node_id": f"{tid}:1", "state": NodeState.CANCELLED}
    _, events, _ = await first
    assert events[-1] == ("error", {"code": "turn_cancelled", "message": "the turn was cancelled"})
    msgs = (await client.get(f"/api/conversations/{tid}/messages")).json()
    assert msgs[0]["role"] == "user" and msgs[0]["content"] == "wait: 10"
    assert msgs[-1]["role"] == "assistant" and msgs[-1]["turn_index"] == 1
    # the family is free again, and the next node hangs from the cancelled one
    _, events, _ = await send_turn(client, tid, "objective: after cancel")
    assert events[0][1]["parent_node_id"] == f"{tid}:1"
    r = await client.post(f"/api/conversations/{tid}/turns/cancel")
    assert r.status_code == 409


async def test_messages_transcript(client: httpx.AsyncClient, tid: str) -> None:
    await send_turn(client, tid, "objective: X")
    await send_turn(client, tid, "hello")
    msgs = (await client.get(f"/api/conversations/{tid}/messages")).json()
    users = [m for m in msgs if m["role"] == "user"]
    assert [(m["content"], m["turn_index"]) for m in users] == [("objective: X", 1), ("hello", 2)]
    assert any(m["role"] == "tool" for m in msgs)
    assert msgs[-1]["role"] == "assistant" and msgs[-1]["turn_index"] == 2


async def test_bad_turn_input(client: httpx.AsyncClient, tid: str) -> None:
    r = await client.post(f"/api/conversations/{tid}/turns", json={"content": ""})
    assert r.status_code == 422 and "content" in r.json()["message"]
    r = await client.post(f"/api/conversations/{tid}/turns", json={"content": "   "})
    assert r.status_code == 422
    r = await client.post("/api/conversations/th_" + "1" * 32 + "/turns", json={"content": "x"})
    assert r.status_code == 404


async def test_failed_close_still_logs_the_streamed_text(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    """The turn's last streamed text is logged in the transaction that ends the turn.
    When that transaction fails, the text is logged on its own, so the sweep records
    the whole reply that was streamed (and the stream still ends)."""
    db = db_of(app)
    with armed_faults(db, "fail") as armed:
        armed["fail"] = Step.CLOSE
        _, events, _ = await send_turn(client, tid, "tell me about sonnets")
    assert Step.CLOSE in armed["seen"]
    streamed = "".join(d["text"] for n, d in events if n == "token")
    assert streamed and events[-1][0] == "turn_completed"
    async with db.read() as s:
        assert (await action_log.turn_logged(s, tid, f"{tid}:1"))[0] == streamed
    async with db.transaction() as s:
        await s.execute(update(ActiveTurn).values(heartbeat_at=now() - timedelta(minutes=10)))
    assert f"{tid}:1" in await app.state.turns.sweep_stale()
    msgs = (await client.get(f"/api/conversations/{tid}/messages")).json()
    replies = [m for m in msgs if m["role"] == "assistant" and m["turn_index"] == 1]
    assert replies and replies[-1]["content"] == streamed
    # The process measured the turn before its close failed: the sweep keeps that.
    p = (await client.get(f"/api/conversations/{tid}/nodes/1")).json()["provenance"]
    assert p["provider"] == "offline" and p["duration_ms"] is not None
    assert p["input_tokens"] > 0 and p["first_token_ms"] is not None


async def test_failed_close_is_swept_as_error(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    """If the transaction that closes a turn fails, the lease goes stale and the sweep
    records the node as failed instead of leaving the family blocked forever."""
    closer = app.state.turns.closer
    original = closer.finish

    async def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected: closing transaction failed")

    closer.finish = broken
    try:
        _, events, _ = await send_turn(client, tid, "objective: x")
    finally:
        closer.finish = original
    assert events[-1][0] == "turn_completed"  # the stream still ends
    status, _, body = await send_turn(client, tid, "objective: blocked")
    assert status == 409 and body["code"] == "turn_in_progress"
    async with db_of(app).transaction() as s:
        await s.execute(update(ActiveTurn).values(heartbeat_at=now() - timedelta(minutes=10)))
    assert f"{tid}:1" in await app.state.turns.sweep_stale()
    graph = (await client.get(f"/api/conversations/{tid}/graph")).json()
    assert [n["state"] for n in graph["nodes"]] == [NodeState.ERROR]
    # Nothing was measured: the provenance is what the log shows (its tool call).
    p = (await client.get(f"/api/conversations/{tid}/nodes/1")).json()["provenance"]
    assert p["provider"] == "offline" and p["model"] == "haico-offline"
    assert p["tool_calls"] == 1 and p["input_tokens"] is None and p["duration_ms"] is None
    assert p["tokens_estimated"] is True and graph["nodes"][0]["model"] == "haico-offline"
    _, events, _ = await send_turn(client, tid, "objective: again")
    assert events[-1][0] == "turn_completed"
    assert events[0][1]["parent_node_id"] == f"{tid}:1"


async def test_a_send_during_the_sweep_waits_for_it(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    """A send that arrives while the sweep is closing the family's abandoned turn (its
    lease already deleted, the head not yet moved) waits for the sweep and then runs
    on the failed node; it is never a 500 (a deadlock, before the sweep took the head
    lock first)."""
    turns = app.state.turns
    db = db_of(app)
    with armed_faults(db, "fail") as armed:
        armed["fail"] = Step.CLOSE
        await send_turn(client, tid, "objective: x")
    async with db.transaction() as s:
        await s.execute(update(ActiveTurn).values(heartbeat_at=now() - timedelta(minutes=10)))

    paused, resume = asyncio.Event(), asyncio.Event()

    async def hold_the_sweep(step: str) -> None:
        if step == Step.SWEEP:
            paused.set()
            await resume.wait()

    original, db.faults = db.faults, hold_the_sweep
    try:
        sweep = asyncio.create_task(turns.sweep_stale())
        await asyncio.wait_for(paused.wait(), 10)
        send = asyncio.create_task(send_turn(client, tid, "objective: after"))
        await asyncio.sleep(0.5)  # the send reaches the database and waits there
        assert not send.done()
        resume.set()
        assert f"{tid}:1" in await asyncio.wait_for(sweep, 20)
        status, events, body = await asyncio.wait_for(send, 20)
    finally:
        db.faults = original
    assert status == 200, body
    assert events[-1][0] == "turn_completed"
    assert events[0][1]["parent_node_id"] == f"{tid}:1"
    graph = (await client.get(f"/api/conversations/{tid}/graph")).json()
    assert [n["state"] for n in graph["nodes"]] == [NodeState.ERROR, NodeState.COMPLETE]


async def test_a_sweep_that_fails_midway_keeps_what_it_closed(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two families with abandoned turns; the sweep's transaction for the second one
        fails. The first stays closed, with the turn's user message in its transcript; the
        second is still running and the next sweep closes it. Each gets its transcript record
    (the user message of a turn whose process died is kept that way)."""
    turns = app.state.turns
    db = db_of(app)
    tids = [(await client.post("/api/conversations", json={})).json()["thread_id"] for _ in "ab"]
    with armed_faults(db, "fail") as armed:
        armed["fail"] = Step.CLOSE
        for tid in tids:
            await send_turn(client, tid, f"objective: lost in {tid}")
    async with db.transaction() as s:
        await s.execute(update(ActiveTurn).values(heartbeat_at=now() - timedelta(minutes=10)))

    reached: list[str] = []

    async def second_fails(step: str) -> None:
        if step == Step.SWEEP:
            reached.append(step)
            if len(reached) == 2:
                raise RuntimeError("injected: the second family's sweep failed")

    recorded: list[str] = []
    record = turns.runtime.record_lost_turn

    async def recording(**kw: Any) -> None:
        recorded.append(f"{kw['thread_id']}:{kw['turn_index']}")
        await record(**kw)

    original, db.faults = db.faults, second_fails
    monkeypatch.setattr(turns.runtime, "record_lost_turn", recording)
    try:
        with pytest.raises(RuntimeError, match="second family"):
            await turns.sweep_stale()
    finally:
        db.faults = original
    first, second = sorted(tids)  # the sweep goes in family order
    states = {}
    for tid in tids:
        graph = (await client.get(f"/api/conversations/{tid}/graph")).json()
        states[tid] = [n["state"] for n in graph["nodes"]]
    assert states == {first: [NodeState.ERROR], second: [NodeState.RUNNING]}
    assert recorded == [f"{first}:1"]  # its transcript record, despite the failure
    assert await turns.sweep_stale() == [f"{second}:1"]
    assert recorded == [f"{first}:1", f"{second}:1"]
    graph = (await client.get(f"/api/conversations/{second}/graph")).json()
    assert [n["state"] for n in graph["nodes"]] == [NodeState.ERROR]


async def test_a_send_reads_the_earlier_turns_once_while_the_turn_opens(
    client: httpx.AsyncClient, tid: str, earlier_reads: list[str]
) -> None:
    """The agent's read of the earlier turns starts with the open and is the turn's only
    one; the transcript keeps every turn."""
    reads = earlier_reads
    for i in range(1, 4):
        reads.clear()
        status, events, _ = await send_turn(client, tid, f"message {i}")
        assert status == 200 and events[-1][0] == "turn_completed"
        assert reads == [tid]
    r = await client.get(f"/api/conversations/{tid}/messages")
    users = [m["content"] for m in r.json() if m["role"] == "user"]
    assert users == ["message 1", "message 2", "message 3"]
