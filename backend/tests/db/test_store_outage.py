"""The database going away mid-use gives a clear 503, never a 500 or a hang, and the
service recovers by itself when it comes back.

PostgreSQL only: the server process reaches the database (app tables and the LangGraph
checkpointer alike) through a TCP proxy that the test cuts and restores. The embedded
SQLite default has no network path to lose.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import httpx
import pytest

from haico.domain import NodeState
from tests.ahp.live import chat_of
from tests.ahp.wire import AhpClient, RpcFailure
from tests.server import Server
from tests.sse_client import parse_sse
from tests.tcp_proxy import TcpProxy

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


@pytest.fixture
async def proxied(server_env: dict[str, str]) -> AsyncIterator[tuple[Server, TcpProxy]]:
    proxy = TcpProxy()
    await proxy.start()
    env = dict(server_env)
    # postgresql://postgres@127.0.0.1:5432/<db>  →  the same database through the proxy
    url = env["HAICO_DATABASE_URL"]
    head, name = url.rsplit("/", 1)
    env["HAICO_DATABASE_URL"] = f"{head.rsplit(':', 1)[0]}:{proxy.port}/{name}"
    server = Server(env)
    await server.start()
    try:
        yield server, proxy
    finally:
        # In a thread: the proxy runs on this loop, and the server's shutdown talks
        # to the database through it.
        await asyncio.to_thread(server.stop)
        await proxy.stop()


def _assert_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, (r.status_code, r.text)
    body = r.json()
    assert body["code"] == "store_unavailable"
    assert "database" in body["message"].lower()
    assert "Traceback" not in r.text and "asyncpg" not in r.text and "psycopg" not in r.text


async def test_outage_answers_503_then_recovers(proxied: tuple[Server, TcpProxy]) -> None:
    server, proxy = proxied
    async with httpx.AsyncClient(base_url=server.url, timeout=20) as c:
        tid = (await c.post("/api/conversations", json={"objective": "o"})).json()["thread_id"]
        r = await c.post(f"/api/conversations/{tid}/turns", json={"content": "objective: one"})
        assert parse_sse(r.text)[-1][0] == "turn_completed"

        ahp = await AhpClient.open(server.url)
        await ahp.initialize(["1.0.0"])

        proxy.cut()
        # AHP: the command fails with the database named, and the connection stays up.
        with pytest.raises(RpcFailure) as failed:
            await ahp.request("subscribe", {"channel": chat_of(tid)})
        assert "database" in str(failed.value.message).lower(), failed.value.message
        assert ahp.close_code is None
        # Reads, writes, a turn, a checkout and the health check: each a clear answer.
        calls = [
            ("GET", f"/api/conversations/{tid}", None),
            ("GET", f"/api/conversations/{tid}/graph", None),
            ("PUT", f"/api/conversations/{tid}/objective", {"text": "lost?"}),
            ("POST", f"/api/conversations/{tid}/turns", {"content": "objective: two"}),
            ("POST", f"/api/conversations/{tid}/checkout", {"turn_id": f"{tid}:1"}),
            ("GET", f"/api/conversations/{tid}/messages", None),
            ("POST", "/api/conversations", {}),
        ]
        for method, path, body in calls:
            started = time.monotonic()
            r = await c.request(method, path, json=body)
            _assert_unavailable(r)
            assert time.monotonic() - started < 15, f"{method} {path} hung"
        health = await c.get("/api/health")
        assert health.status_code == 503
        assert health.json()["database"] == "unreachable"
        assert proxy.refused > 0, "the server never tried to reach the database"

        proxy.restore()
        deadline = time.monotonic() + 20
        while (await c.get(f"/api/conversations/{tid}")).status_code != 200:
            assert time.monotonic() < deadline, "the service did not recover"
            await asyncio.sleep(0.3)
        # Nothing half-done: the edit made during the outage did not land, and turns
        # (the checkpointer's pool included) work again.
        ws = (await c.get(f"/api/conversations/{tid}/workspace")).json()
        assert ws["objective"] == "one"
        r = await c.post(f"/api/conversations/{tid}/turns", json={"content": "objective: two"})
        events = parse_sse(r.text)
        assert events[-1][0] == "turn_completed", events[-3:]
        assert (await c.get(f"/api/conversations/{tid}/workspace")).json()["objective"] == "two"
        assert (await c.get("/api/health")).status_code == 200
        await ahp.request("subscribe", {"channel": chat_of(tid)})
        await ahp.ws.close()


async def test_outage_during_a_turn_ends_its_stream_with_an_error(
    proxied: tuple[Server, TcpProxy],
) -> None:
    """The line is cut while a reply streams: the stream ends with an `error` event
    (no hang, no dropped connection), and after recovery the turn is a failed node
    and the family takes new turns."""
    server, proxy = proxied
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        seen: list[str] = []
        started = time.monotonic()
        async with c.stream(
            "POST", f"/api/conversations/{tid}/turns", json={"content": "wait: 6"}
        ) as r:
            assert r.status_code == 200
            async for line in r.aiter_lines():
                seen.append(line)
                if line.startswith("event: token") and not proxy.cut_off:
                    proxy.cut()
        assert time.monotonic() - started < 25, "the stream hung"
        events = parse_sse("\n".join(seen) + "\n\n")
        assert events[-1][0] == "error", events[-3:]
        assert events[-1][1]["code"] == "store_unavailable"

        proxy.restore()
        deadline = time.monotonic() + 30
        while True:
            r = await c.post(
                f"/api/conversations/{tid}/turns", json={"content": "objective: after"}
            )
            if r.status_code == 200 and parse_sse(r.text)[-1][0] == "turn_completed":
                break
            assert r.status_code in (409, 503), f"{r.text}\n{server.log_tail()}"
            assert time.monotonic() < deadline, "the family never took a turn again"
            await asyncio.sleep(0.5)
        graph = (await c.get(f"/api/conversations/{tid}/graph")).json()
        states = {n["turn_index"]: n["state"] for n in graph["nodes"]}
        assert states[1] == NodeState.ERROR and states[2] == NodeState.COMPLETE, states
