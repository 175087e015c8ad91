"""Concurrency of the history state, on PostgreSQL (real row locks, several processes):
racing checkouts, a checkout racing a send, and events seen across two processes."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from app.db.models import Conversation
from app.errors import Forbidden, LeaseHeld
from app.services import history as history_service
from app.services import users
from tests.helpers import db_of
from tests.history_helpers import (
    actions,
    checkout,
    draft_ids,
    graph,
    read_events,
    thread_with_turns,
)
from tests.history_helpers import history as get_history
from tests.server import Server
from tests.sse_client import send_turn

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


async def _assert_consistent(app: FastAPI, client: httpx.AsyncClient, root: str) -> dict[str, Any]:
    """GET /history agrees with the graph: the working thread's tip is the head."""
    h = await get_history(client, root)
    assert h["active_turn"] is None
    working = h["working_thread_id"]
    conv = (await client.get(f"/api/conversations/{working}")).json()
    drafts = await draft_ids(app, root)
    assert drafts in ([], [working])
    g = await graph(client, working)
    assert g["head_turn_id"] == h["head_turn_id"]
    nodes = {n["id"]: n for n in g["nodes"]}
    if h["head_turn_id"] is not None:
        assert h["head_turn_id"] in nodes
    if drafts:
        # a draft hangs from the head and owns no node
        bp = conv["branch_point_turn"]
        assert conv["turn_index"] == bp
        assert h["head_turn_id"] == (None if bp == 0 else h["head_turn_id"])
        if h["head_turn_id"] is not None:
            assert int(h["head_turn_id"].rsplit(":", 1)[1]) == bp
    else:
        assert h["head_turn_id"] == f"{working}:{conv['turn_index']}"
    return h


async def test_concurrent_checkouts_one_winner(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await thread_with_turns(client, 20)
    head = f"{tid}:20"
    targets: list[str | None] = [f"{tid}:{k}" for k in range(1, 20)] + [None]
    responses = await asyncio.gather(
        *(checkout(client, tid, t, expected_head_turn_id=head) for t in targets)
    )
    ok = [(t, r) for t, r in zip(targets, responses, strict=True) if r.status_code == 200]
    assert len(ok) == 1, [(r.status_code, r.text) for r in responses]
    winner, response = ok[0]
    for r in responses:
        if r.status_code != 200:
            assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    h = await _assert_consistent(app, client, tid)
    assert h["head_turn_id"] == winner
    assert h == response.json()
    assert await draft_ids(app, tid) == [h["working_thread_id"]]


async def test_checkout_racing_a_send(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await thread_with_turns(client, 3)
    outcomes: set[str] = set()
    for i in range(8):
        before = await _assert_consistent(app, client, tid)
        root_clock = (await client.get(f"/api/conversations/{tid}")).json()["turn_index"]
        target = f"{tid}:{1 + i % 2}"
        # stagger one side a little, alternating, so both orders happen
        delay_co, delay_send = (0.0, 0.01 * (i % 3)) if i % 2 else (0.01 * (i % 3), 0.0)

        async def do_checkout(
            delay: float = delay_co, target: str = target, expected: Any = before["head_turn_id"]
        ) -> httpx.Response:
            await asyncio.sleep(delay)
            return await checkout(client, tid, target, expected_head_turn_id=expected)

        async def do_send(
            delay: float = delay_send, i: int = i
        ) -> tuple[int, list[tuple[str, Any]], Any]:
            await asyncio.sleep(delay)
            return await send_turn(client, tid, f"objective: race {i}")

        co, (status, events, body) = await asyncio.gather(do_checkout(), do_send())
        assert co.status_code in (200, 409), co.text
        if co.status_code == 409:
            assert co.json()["code"] in ("turn_in_progress", "conflict"), co.text
        assert status in (200, 409), body
        if status == 409:
            assert body["code"] in ("turn_in_progress", "conflict"), body
        after = await _assert_consistent(app, client, tid)
        if status == 200:
            assert events[-1][0] == "turn_completed"
            node = events[0][1]["node_id"]
            assert after["head_turn_id"] == node
            if co.status_code == 200:
                # the checkout landed first; the send checked out the root's tip again
                outcomes.add("checkout, then send")
                assert node.startswith(f"{tid}:")
            else:
                outcomes.add("send won")
                # The send continues from the head when it posts to the working thread;
                # otherwise it first checks out the posted thread's tip (its own step).
                expected_parent = (
                    before["head_turn_id"]
                    if before["working_thread_id"] == tid
                    else f"{tid}:{root_clock}"
                )
                assert events[0][1]["parent_node_id"] == expected_parent
        else:
            outcomes.add("send refused")
            assert co.status_code == 200 and after == co.json()
    assert outcomes


async def test_two_processes_see_each_others_checkouts(server_env: dict[str, str]) -> None:
    a, b = Server(server_env), Server(server_env)
    await a.start()
    await b.start()
    try:
        async with (
            httpx.AsyncClient(base_url=a.url, timeout=30) as ca,
            httpx.AsyncClient(base_url=b.url, timeout=30) as cb,
        ):
            tid = await thread_with_turns(ca, 2)
            assert (await get_history(cb, tid))["head_turn_id"] == f"{tid}:2"
            ready = asyncio.Event()
            reader = asyncio.create_task(
                read_events(
                    b.url,
                    tid,
                    until=lambda ev: len(actions(ev, "chat/historyCheckedOut")) >= 3,
                    ready=ready,
                    wait=30,
                )
            )
            await asyncio.wait_for(ready.wait(), 10)
            for turn_id in (f"{tid}:1", f"{tid}:2", None):
                r = await checkout(ca, tid, turn_id, force=True)
                assert r.status_code == 200, r.text
            events = await reader
            seqs = [e["serverSeq"] for e in events]
            assert seqs == sorted(set(seqs))
            moves = actions(events, "chat/historyCheckedOut")
            assert [m.get("headTurnId") for m in moves] == [f"{tid}:1", f"{tid}:2", None]
            kinds = [e["action"]["type"] for e in events]
            assert kinds.index("chat/turnComplete") < kinds.index("chat/historyCheckedOut")
            # and B serves the state A committed
            assert (await get_history(cb, tid))["head_turn_id"] is None
    finally:
        a.stop()
        b.stop()


async def test_a_held_lease_answers_the_owner_409_and_a_stranger_403(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The checkout asks for the head lock before it knows who owns the thread (one read
    does both); while another transaction holds that lock, the owner is told to retry
    and a stranger still gets 403, as if nothing were held."""
    tid = await thread_with_turns(client, 2)
    db = db_of(app)
    stranger, _ = await users.create(db, name=f"s-{uuid.uuid4().hex[:8]}")
    owner_id = await history_owner(app, tid)
    async with db.transaction() as holder:
        await holder.execute(
            text("SELECT 1 FROM chat_heads WHERE root_thread_id = :r FOR UPDATE"), {"r": tid}
        )
        with pytest.raises(LeaseHeld, match="retry"):
            await history_service.checkout(
                db, user_id=owner_id, thread_id=tid, turn_id=f"{tid}:1", retains=True
            )
        with pytest.raises(Forbidden):
            await history_service.checkout(
                db, user_id=stranger.id, thread_id=tid, turn_id=f"{tid}:1", retains=True
            )
        r = await checkout(client, tid, f"{tid}:1")
        assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    # Once the holder is gone, the same checkout goes through.
    r = await checkout(client, tid, f"{tid}:1")
    assert r.status_code == 200, r.text
    assert (await get_history(client, tid))["head_turn_id"] == f"{tid}:1"


async def history_owner(app: FastAPI, thread_id: str) -> int:
    async with db_of(app).read() as s:
        conv = await s.get(Conversation, thread_id)
        assert conv is not None
        return conv.user_id
