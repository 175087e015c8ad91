"""Concurrency of the history state, on PostgreSQL (real row locks, several processes):
events seen across two processes, and a held head lock. The racing checkouts and a
checkout racing a send are rounds of `test_race_rounds.py`."""

from __future__ import annotations

import asyncio
import uuid

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from haico.db.models import Conversation
from haico.errors import Forbidden, LeaseHeld
from haico.services.access import users
from haico.services.history import state as history_service
from tests.helpers import as_user, db_of
from tests.history_helpers import actions, checkout, read_events, thread_with_turns
from tests.history_helpers import history as get_history
from tests.server import Server

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


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
                db, principal=as_user(owner_id), thread_id=tid, turn_id=f"{tid}:1", retains=True
            )
        with pytest.raises(Forbidden):
            await history_service.checkout(
                db, principal=stranger, thread_id=tid, turn_id=f"{tid}:1", retains=True
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
