"""A subscriber that stops reading never slows the others (SQLite and PostgreSQL, a
real socket): turns stream to a normal subscriber while two hand-made WebSocket
clients with tiny receive buffers read nothing. The host keeps what waits for each of
them bounded, closes both with 4008, aborts the one that still reads nothing after the
grace period, and the other reads up to its close frame and then catches up with
`reconnect`."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any

import pytest
from fastapi import FastAPI
from httpx import AsyncClient

from haico.ahp import outbox
from haico.ahp.protocol import SLOW_CONSUMER
from haico.ahp.state import ConnectionState
from tests.ahp.live import chat_of, connected, until
from tests.ahp.rawws import RawWs
from tests.history_helpers import live_server, new_thread, turn_ok

Json = dict[str, Any]
QUEUE_BYTES = 256 * 1024
BIG = "wait: 0.5\n" + "words " * 15000  # a 90 KB message: every turnStarted carries it


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"ahp_queue_bytes": QUEUE_BYTES}


def server_side(client_id: str) -> ConnectionState | None:
    return next((c for c in ConnectionState.live if c.client_id == client_id), None)


def completes(turn_id: str) -> Callable[[Json], bool]:
    return lambda e: e["action"]["type"] == "chat/turnComplete" and e["action"]["turnId"] == turn_id


async def stalled(base: str, chat: str, client_id: str) -> tuple[RawWs, int]:
    """A raw client subscribed to `chat` that will read nothing more; the serverSeq
    it has seen."""
    raw = await RawWs.open(base, rcvbuf=4096)
    init = await raw.call("initialize", {"protocolVersions": ["1.0.0"], "clientId": client_id})
    snap = await raw.call("subscribe", {"channel": chat})
    return raw, max(int(init["serverSeq"]), int(snap["snapshot"]["fromSeq"]))


async def test_a_slow_consumer_is_closed_without_slowing_the_others(
    app: FastAPI, client: AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(outbox, "CLOSE_GRACE", 3.0)
    tid = await new_thread(client)
    chat = chat_of(tid)
    async with live_server(app) as base:
        normal = await connected(base, chat)
        reader, last_seen = await stalled(base, chat, "slow-reader")
        hung, _ = await stalled(base, chat, "hung")
        conns = {name: server_side(name) for name in ("slow-reader", "hung")}
        assert all(conns.values())
        # Watch from inside the process: what waits for the stalled clients, and when
        # the normal subscriber receives something.
        peak = 0
        arrivals: list[float] = []
        seen = 0
        streaming = True

        async def watch() -> None:
            nonlocal peak, seen
            while streaming:
                for conn in conns.values():
                    assert conn is not None
                    peak = max(peak, conn.out.pending_bytes())
                if len(normal.actions) > seen:
                    seen = len(normal.actions)
                    arrivals.append(time.monotonic())
                await asyncio.sleep(0.01)

        watcher = asyncio.create_task(watch())
        began = time.monotonic()
        turns = 0
        lags: list[float] = []
        while not all(c is not None and c.out.closed.is_set() for c in conns.values()):
            assert time.monotonic() - began < 60, "the stalled clients were never closed"
            await turn_ok(client, tid, BIG)
            done = time.monotonic()
            turns += 1
            await normal.wait_for(completes(f"{tid}:{turns}"), within=10)
            lags.append(time.monotonic() - done)
        closed_after = time.monotonic() - began
        # One more turn that the stalled clients miss.
        await turn_ok(client, tid, "objective: after the close")
        streaming = False
        await watcher
        assert all(c is not None and c.out.close_code == SLOW_CONSUMER for c in conns.values())
        assert closed_after < 60
        # The normal subscriber was never held up: it saw every turn end at once, and
        # while turns streamed it never went long without a message.
        assert max(lags) < 1.0, lags
        gaps = [b - a for a, b in itertools.pairwise(arrivals)]
        assert gaps and max(gaps) < 2.0, max(gaps)
        # What waited for a stalled client stayed bounded (the limit, plus the one
        # message always let through, plus the capped write buffer's slack).
        assert peak <= QUEUE_BYTES + 2 * len(BIG), peak
        # The client that reads again gets what was sent before the close, then 4008.
        messages = await asyncio.wait_for(reader.drain(), 10)
        assert reader.close_code == SLOW_CONSUMER
        assert reader.received_bytes < 4 * 1024 * 1024
        seqs = [int(m["params"]["serverSeq"]) for m in messages if m.get("method") == "action"]
        assert seqs == sorted(seqs)
        last_seen = max([last_seen, *seqs])
        # The one that never reads is cut off after the grace period.
        await until(
            lambda: server_side("hung") is None and server_side("slow-reader") is None,
            within=10,
            what="both stalled connections released",
        )
        hung_messages = await asyncio.wait_for(hung.drain(), 10)
        assert hung.close_code is None or hung.close_code == SLOW_CONSUMER, hung_messages[-1:]
        # Reconnecting from what it saw, the reader catches up: the turns it missed.
        again = await connected(base)
        result = await again.request(
            "reconnect",
            {"clientId": "slow-reader", "lastSeenServerSeq": last_seen, "subscriptions": [chat]},
        )
        assert result["type"] == "replay" and result["missing"] == []
        ended = [
            e["action"]["turnId"]
            for e in result["actions"]
            if e["action"]["type"] == "chat/turnComplete"
        ]
        assert ended and ended[-1] == f"{tid}:{turns + 1}"
        assert [e["serverSeq"] for e in result["actions"]] == sorted(
            e["serverSeq"] for e in result["actions"]
        )
        assert min(e["serverSeq"] for e in result["actions"]) > last_seen
        # And it is live again.
        await turn_ok(client, tid, "objective: live again")
        await again.wait_for(completes(f"{tid}:{turns + 2}"))
        assert not normal.invalid and not again.invalid
        reader.close()
        hung.close()
        await normal.close()
        await again.close()
