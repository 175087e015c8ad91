"""A server stopped with SIGTERM closes its SSE streams and AHP WebSockets cleanly
(the streams end, the sockets get a close frame) and exits promptly."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time

import httpx

from haico.domain import NodeState
from tests.ahp.live import chat_of
from tests.ahp.wire import AhpClient
from tests.history_helpers import wait_for_active_turn
from tests.server import Server, served_here


async def test_sigterm_ends_streams_and_sockets_cleanly(server_env: dict[str, str]) -> None:
    server = Server(server_env)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        ws = await AhpClient.open(server.url)
        await ws.initialize(["1.0.0"])
        await ws.request("subscribe", {"channel": chat_of(tid)})
        lines: list[str] = []
        opened, ended = asyncio.Event(), asyncio.Event()

        async def follow() -> None:
            async with c.stream("GET", f"/api/conversations/{tid}/events?after=0") as r:
                assert r.status_code == 200
                opened.set()
                with contextlib.suppress(httpx.HTTPError):
                    async for line in r.aiter_lines():
                        lines.append(line)
            ended.set()

        follower = asyncio.create_task(follow())
        await asyncio.wait_for(opened.wait(), 10)  # the stream is open (and stays idle)
        assert server.proc is not None
        started = time.monotonic()
        server.proc.terminate()
        code = await asyncio.to_thread(server.proc.wait, 20)
        took = time.monotonic() - started
        # uvicorn re-raises the signal once it has shut down: exit by SIGTERM, on time.
        assert code in (0, -signal.SIGTERM), f"exited with {code}"
        assert took < 10, f"shutdown took {took:.1f} s"
        async with asyncio.timeout(5):
            await ended.wait()
            await ws.task
        await follower
        # The WebSocket got a close frame saying the server is going away.
        assert ws.close_code in (1001, 1012), ws.close_code


async def test_sigterm_during_a_long_turn_stops_in_bounded_time(
    server_env: dict[str, str],
) -> None:
    """A turn still streaming does not hold the server: it stops within the graceful
    period, and after a restart the turn is a closed node (not left running)."""
    server = Server(server_env)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        turn = asyncio.create_task(
            c.post(f"/api/conversations/{tid}/turns", json={"content": "wait: 40"})
        )
        await wait_for_active_turn(c, tid)  # the turn is streaming
        assert server.proc is not None
        started = time.monotonic()
        server.proc.terminate()
        await asyncio.to_thread(server.proc.wait, 30)
        took = time.monotonic() - started
        assert took < 12, f"shutdown took {took:.1f} s"
        with contextlib.suppress(httpx.HTTPError):
            await turn
    async with served_here(server_env) as (_, c):
        for _ in range(100):
            graph = (await c.get(f"/api/conversations/{tid}/graph")).json()
            states = [n["state"] for n in graph["nodes"]]
            if states and states[0] != NodeState.RUNNING:
                break
            await asyncio.sleep(0.3)
        assert states == [NodeState.ERROR], states
        h = (await c.get(f"/api/conversations/{tid}/history")).json()
        assert h["active_turn"] is None and h["head_turn_id"] == f"{tid}:1"
