"""A server stopped with SIGTERM closes its SSE streams and AHP WebSockets cleanly
(the streams end, the sockets get a close frame) and exits promptly."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time

import httpx

from tests.ahp.live import chat_of
from tests.ahp.wire import AhpClient
from tests.server import Server


async def test_sigterm_ends_streams_and_sockets_cleanly(server_env: dict[str, str]) -> None:
    server = Server(server_env)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        ws = await AhpClient.open(server.url)
        await ws.initialize(["1.0.0"])
        await ws.request("subscribe", {"channel": chat_of(tid)})
        lines: list[str] = []
        ended = asyncio.Event()

        async def follow() -> None:
            async with c.stream("GET", f"/api/conversations/{tid}/events?after=0") as r:
                assert r.status_code == 200
                with contextlib.suppress(httpx.HTTPError):
                    async for line in r.aiter_lines():
                        lines.append(line)
            ended.set()

        follower = asyncio.create_task(follow())
        await asyncio.sleep(1.0)  # the stream is open and idle
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
