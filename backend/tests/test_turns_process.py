"""Turns against the real server process: client disconnects and server crashes."""

from __future__ import annotations

import asyncio
import contextlib

import httpx

from tests.server import Server
from tests.sse_client import parse_sse


async def _wait_for_state(c: httpx.AsyncClient, tid: str, turn: int, want: str) -> dict:
    for _ in range(100):
        graph = (await c.get(f"/api/conversations/{tid}/graph")).json()
        node = next((n for n in graph["nodes"] if n["turn_index"] == turn), None)
        if node and node["state"] == want:
            return node
        await asyncio.sleep(0.2)
    raise AssertionError(f"turn {turn} never reached state {want}")


async def test_disconnect_mid_stream_still_completes(server_env: dict[str, str]) -> None:
    server = Server(server_env)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
            tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
            async with c.stream(
                "POST", f"/api/conversations/{tid}/turns", json={"content": "wait: 2"}
            ) as r:
                async for chunk in r.aiter_text():
                    if "turn_started" in chunk:
                        break  # hang up right after the turn started
            node = await _wait_for_state(c, tid, 1, "complete")
            assert node["id"] == f"{tid}:1"
            msgs = (await c.get(f"/api/conversations/{tid}/messages")).json()
            assert [m["role"] for m in msgs][:1] == ["user"] and msgs[-1]["role"] == "assistant"
            r = await c.post(f"/api/conversations/{tid}/turns", json={"content": "objective: ok"})
            assert parse_sse(r.text)[-1][0] == "turn_completed"
    finally:
        server.stop()


async def test_killed_server_marks_turn_failed_on_restart(server_env: dict[str, str]) -> None:
    server = Server(server_env)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        task = asyncio.create_task(
            c.post(f"/api/conversations/{tid}/turns", json={"content": "wait: 20"})
        )
        await asyncio.sleep(1.5)
        server.kill()
        with contextlib.suppress(httpx.HTTPError):
            await task
    restarted = Server(server_env)
    await restarted.start()
    try:
        async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as c:
            node = await _wait_for_state(c, tid, 1, "error")
            assert node["user_message"] == "wait: 20"
            r = await c.post(
                f"/api/conversations/{tid}/turns", json={"content": "objective: again"}
            )
            events = parse_sse(r.text)
            assert events[0][1]["turn_index"] == 2 and events[-1][0] == "turn_completed"
    finally:
        restarted.stop()
