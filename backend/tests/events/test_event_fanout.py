"""Cross-process fan-out on PostgreSQL with the poll switched off: only LISTEN/NOTIFY
(and the replay after a dropped LISTEN connection) can deliver."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from typing import Any

import asyncpg
import httpx
import pytest

from tests.conftest import PG_ADMIN_URL
from tests.server import Server

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


class Follower:
    """Reads a family's event stream on one server, noting when each action arrived."""

    def __init__(self, base_url: str, thread_id: str) -> None:
        self.base_url, self.thread_id = base_url, thread_id
        self.arrivals: list[tuple[float, dict[str, Any]]] = []
        self.ready = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        async with (
            httpx.AsyncClient(base_url=self.base_url, timeout=None) as c,
            c.stream("GET", f"/api/conversations/{self.thread_id}/events?after=0") as r,
        ):
            self.ready.set()
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    self.arrivals.append((time.monotonic(), json.loads(line[5:])["action"]))

    async def wait_for(self, pred: Any, within: float) -> float:
        """Seconds until an action matching `pred` has arrived."""
        start = time.monotonic()
        while time.monotonic() - start < within:
            for at, action in self.arrivals:
                if pred(action):
                    return max(0.0, at - start)
            await asyncio.sleep(0.01)
        raise AssertionError("the action never arrived")

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


def _objective(text: str) -> Any:
    return lambda a: a["type"] == "haico/workspaceChanged" and a.get("item") == {"text": text}


async def _terminate_listeners(database: str) -> int:
    conn = await asyncpg.connect(PG_ADMIN_URL)
    try:
        rows = await conn.fetch(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE application_name = 'haico-listen' AND datname = $1",
            database,
        )
        return len(rows)
    finally:
        await conn.close()


async def test_notify_alone_delivers_across_processes_and_survives_a_dropped_listener(
    server_env: dict[str, str],
) -> None:
    env = {**server_env, "HAICO_EVENT_POLL_SECONDS": "0"}
    a, b = Server(env), Server(env)
    await a.start()
    await b.start()
    follower: Follower | None = None
    try:
        async with httpx.AsyncClient(base_url=a.url, timeout=30) as ca:
            tid = (await ca.post("/api/conversations", json={})).json()["thread_id"]
            follower = Follower(b.url, tid)
            await asyncio.wait_for(follower.ready.wait(), 10)
            await asyncio.sleep(0.3)  # the stream is past its replay and waiting live

            # A change made through A reaches a follower on B through NOTIFY alone.
            r = await ca.put(f"/api/conversations/{tid}/objective", json={"text": "first"})
            assert r.status_code == 200
            assert await follower.wait_for(_objective("first"), 5) < 1.0

            # Drop every LISTEN connection of this database, then change things at once:
            # B reconnects and replays from the log what it missed.
            database = env["HAICO_DATABASE_URL"].rsplit("/", 1)[1]
            assert await _terminate_listeners(database) == 2
            r = await ca.put(f"/api/conversations/{tid}/objective", json={"text": "missed"})
            assert r.status_code == 200
            await follower.wait_for(_objective("missed"), 10)
            r = await ca.put(f"/api/conversations/{tid}/objective", json={"text": "after"})
            assert await follower.wait_for(_objective("after"), 5) < 1.0
            seqs = [e for _, e in follower.arrivals]
            assert len(seqs) == len({json.dumps(e, sort_keys=True) for e in seqs})
    finally:
        if follower is not None:
            await follower.close()
        a.stop()
        b.stop()
