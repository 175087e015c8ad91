"""`haico serve` keeps an idle HTTP connection open for the client's next request.

httpx keeps an idle connection 5 s and uvicorn used to close it after 5 s: a request
sent on it as the server closed it failed with a ReadError (and through a proxy with a
longer pool, a 502). The server now waits `HAICO_KEEP_ALIVE_SECONDS` (75 s by default),
longer than those clients and the proxy in deploy/Caddyfile.
"""

from __future__ import annotations

import asyncio

import pytest

from tests.server import Server

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)

REQUEST = b"GET /api/health HTTP/1.1\r\nHost: haico.test\r\nConnection: keep-alive\r\n\r\n"


async def _ask(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
    """One request on the open connection; the status line of the answer, or b'' when
    the server had closed the connection."""
    writer.write(REQUEST)
    await writer.drain()
    head = b""
    async with asyncio.timeout(10):
        while b"\r\n\r\n" not in head:
            chunk = await reader.read(4096)
            if not chunk:
                return b""
            head += chunk
    headers, _, body = head.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in headers.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    if len(body) < length:
        await reader.readexactly(length - len(body))
    return headers.split(b"\r\n", 1)[0]


async def _idle_then_ask(server: Server, idle: float) -> tuple[bytes, bytes]:
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    try:
        first = await _ask(reader, writer)
        await asyncio.sleep(idle)
        try:
            second = await _ask(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            second = b""
        return first, second
    finally:
        writer.close()


async def test_an_idle_connection_outlives_the_clients_own_keep_alive(
    server_env: dict[str, str],
) -> None:
    server = Server(server_env)
    await server.start()
    try:
        # Longer idle than uvicorn's 5 s default and httpx's 5 s: still served.
        first, second = await _idle_then_ask(server, 6.0)
        assert first == second == b"HTTP/1.1 200 OK"
    finally:
        server.stop()


async def test_the_keep_alive_time_is_a_setting(server_env: dict[str, str]) -> None:
    server = Server({**server_env, "HAICO_KEEP_ALIVE_SECONDS": "1"})
    await server.start()
    try:
        first, second = await _idle_then_ask(server, 3.0)
        assert first == b"HTTP/1.1 200 OK" and second == b""  # closed by the server
    finally:
        server.stop()
