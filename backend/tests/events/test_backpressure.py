"""Backpressure: what a slow client or a slow model may hold on the server.

- A follower of `GET …/events` that stops reading holds at most
  `HAICO_SSE_QUEUE_SIZE` actions: past that its stream ends, and when it reads again
  it gets what was already on its way, then the end; it comes back with
  `Last-Event-ID` and loses nothing.
- A turn whose model is slow between tokens holds no database connection while it
  waits for the model (the app's SQL pool, and on PostgreSQL the checkpointer's).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from fastapi.responses import StreamingResponse

from haico.api.sse import SLOW_READER
from haico.config import Settings
from haico.main import create_app
from tests.agent.test_providers import FakeServer
from tests.ahp.live import until
from tests.helpers import db_of
from tests.history_helpers import live_server, new_thread
from tests.sse_client import send_turn

API = "/api/conversations"
QUEUE = 16
OBJECTIVE = "x" * 99_000  # every action of an edit carries the text: ~100 KB each


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"sse_queue_size": QUEUE}


class StalledReader:
    """`GET …/events` on a raw socket with a small receive buffer, which reads the
    response's head and then nothing until `drain` (a client library would keep
    reading in the background)."""

    def __init__(self, sock: socket.socket, rest: bytes) -> None:
        self.sock = sock
        self.body = rest

    @classmethod
    async def open(cls, base: str, path: str) -> StalledReader:
        host, port = base.removeprefix("http://").split(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.sock_connect(sock, (host, int(port)))
        request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: text/event-stream\r\n\r\n"
        await loop.sock_sendall(sock, request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = await loop.sock_recv(sock, 4096)
            assert chunk, "closed before the response's head"
            head += chunk
        status, rest = head.split(b"\r\n\r\n", 1)
        assert b" 200 " in status.split(b"\r\n")[0], status
        assert b"transfer-encoding: chunked" in status.lower()
        return cls(sock, rest)

    async def drain(self) -> str:
        """Read up to the end of the response (its last, empty chunk): the SSE text."""
        loop = asyncio.get_running_loop()
        while not self.body.endswith(b"0\r\n\r\n"):
            chunk = await loop.sock_recv(self.sock, 65536)
            assert chunk, "the connection closed before the response ended"
            self.body += chunk
        self.sock.close()
        text, rest = b"", self.body
        while True:
            size_line, rest = rest.split(b"\r\n", 1)
            size = int(size_line, 16)
            if size == 0:
                return text.decode()
            text, rest = text + rest[:size], rest[size + 2 :]


def _ids(sse: str) -> list[int]:
    return [int(line[3:].strip()) for line in sse.splitlines() if line.startswith("id:")]


async def _read_all(base: str, tid: str, last_id: int) -> list[int]:
    """The ids a reconnecting EventSource gets after `last_id`, up to the present."""
    ids: list[int] = []
    async with (
        httpx.AsyncClient(base_url=base, timeout=30) as c,
        c.stream("GET", f"{API}/{tid}/events", headers={"Last-Event-ID": str(last_id)}) as r,
    ):
        assert r.status_code == 200
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(1.0):  # the backlog is sent at once; then idle
                async for line in r.aiter_lines():
                    if line.startswith("id:"):
                        ids.append(int(line[3:].strip()))
    return ids


async def test_a_follower_that_stops_reading_is_cut_off_and_resumes(
    app: FastAPI, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    tid = await new_thread(client)
    bus = app.state.bus
    async with live_server(app) as base:
        reader = await StalledReader.open(base, f"{API}/{tid}/events?after=0")
        await until(lambda: tid in bus._subs, within=10, what="the follower subscribed")
        (sub,) = bus._subs[tid]
        # Edit until the follower is cut off: every buffer between the server and the
        # stalled socket fills (the kernel's take a few MB), then its queue.
        peak, edits = 0, 0
        while not sub.overflowed:
            assert edits < 200, "the stalled follower was never cut off"
            r = await client.put(f"{API}/{tid}/objective", json={"text": f"{edits} {OBJECTIVE}"})
            assert r.status_code == 200, r.text
            edits += 1
            peak = max(peak, sub.queue.qsize())
        assert peak <= QUEUE and sub.queue.qsize() == 1  # nothing but the end
        assert tid not in bus._subs  # it is handed nothing more
        # It was stalled (it took more than its queue holds), and what it held besides
        # its queue stayed small: the few actions in FastAPI's hands and the socket's
        # buffers, whose kernel part the server caps at 128 KiB (`haico.process.sockets`; left to
        # the kernel, the loopback socket took about 3 MB, some 30 of these edits).
        assert QUEUE < edits <= QUEUE + 12, edits
        assert any("is not reading" in r.getMessage() for r in caplog.records)

        # Reading again, it gets what was on its way, then the end, with the line
        # that says why; the rest comes with Last-Event-ID, once each and in order.
        sse = await asyncio.wait_for(reader.drain(), 10)
        assert sse.rstrip().endswith(f": {SLOW_READER}")
        before = _ids(sse)
        assert before == sorted(set(before))
        after = await _read_all(base, tid, before[-1])
        everything = await _read_all(base, tid, 0)
        assert len(everything) >= edits
        assert before + after == everything


async def test_a_follower_that_reads_is_never_cut_off(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The limit counts only what waits: a follower reading along takes many more
    actions than the queue holds and stays connected."""
    tid = await new_thread(client)
    async with live_server(app) as base:
        ids: list[int] = []
        async with (
            httpx.AsyncClient(base_url=base, timeout=30) as c,
            c.stream("GET", f"{API}/{tid}/events?after=0") as r,
        ):
            lines = r.aiter_lines()
            for i in range(2 * QUEUE):
                r2 = await client.put(f"{API}/{tid}/objective", json={"text": f"step {i}"})
                assert r2.status_code == 200
                while len(ids) < i + 1:
                    line = await asyncio.wait_for(anext(lines), 10)
                    if line.startswith("id:"):
                        ids.append(int(line[3:].strip()))
        assert len(ids) == 2 * QUEUE == len(set(ids))


# --- a slow model holds no database connection -------------------------------------

GAP_S = 1.0  # the fake model's silence between tokens
TOKENS = 2


def _data(delta: dict[str, Any], finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "slow"}
    return f"data: {json.dumps({**body, 'choices': [choice]})}\n\n".encode()


def paced_app() -> FastAPI:
    """The tests' fake OpenAI-compatible server, made slow: `TOKENS` tokens, each
    after `GAP_S` seconds of silence."""
    fake = FastAPI()

    @fake.post("/v1/chat/completions")
    async def completions() -> StreamingResponse:
        async def body() -> AsyncIterator[bytes]:
            yield _data({"role": "assistant", "content": ""})
            for i in range(TOKENS):
                await asyncio.sleep(GAP_S)
                yield _data({"content": f"t{i} "})
            yield _data({}, "stop") + b"data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    return fake


@pytest.fixture
def slow_model() -> Iterator[str]:
    with FakeServer(paced_app()) as server:
        yield f"http://127.0.0.1:{server.port}/v1"


async def test_a_slow_model_holds_no_database_connection(
    settings: Settings, slow_model: str
) -> None:
    """A turn streams two tokens, each after a second of silence, from a fake
    OpenAI-compatible server. Sampled every 10 ms, the process's pools show no
    connection out for longer than a fraction of that silence."""
    provider = settings.model_copy(
        update={"llm": "openai", "llm_base_url": slow_model, "llm_api_key": "k", "llm_model": "m"}
    )
    application = create_app(provider)
    async with application.router.lifespan_context(application):
        transport = httpx.ASGITransport(app=application, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            tid = await new_thread(c)
            pool = db_of(application).engine.sync_engine.pool
            store = application.state.handles.turns.runtime.store
            checkpoints = store._pool  # PostgreSQL only

            def in_use() -> int:
                n: int = pool.checkedout()  # type: ignore[attr-defined]
                if checkpoints is not None:
                    stats = checkpoints.get_stats()
                    n += stats["pool_size"] - stats["pool_available"]
                return n

            samples: list[tuple[float, int]] = []
            sampling = True

            async def sample() -> None:
                while sampling:
                    samples.append((time.monotonic(), in_use()))
                    await asyncio.sleep(0.01)

            sampler = asyncio.create_task(sample())
            began = time.monotonic()
            status, events, _ = await send_turn(c, tid, "tell me slowly")
            took = time.monotonic() - began
            sampling = False
            await sampler
    assert status == 200 and events[-1][0] == "turn_completed", events[-1:]
    assert events[-1][1]["reply"] == "".join(f"t{i} " for i in range(TOKENS))
    assert took >= TOKENS * GAP_S * 0.9
    # The longest stretch with a connection out of a pool: a turn that held one while
    # the model was silent would show a stretch of at least one gap (the whole turn,
    # if it held one throughout).
    longest, since = 0.0, None
    for at, n in samples:
        if n and since is None:
            since = at
        elif not n and since is not None:
            longest, since = max(longest, at - since), None
    if since is not None:
        longest = max(longest, samples[-1][0] - since)
    assert longest < 0.75 * GAP_S, f"a connection stayed out for {longest:.2f} s"
    idle = sum(1 for _, n in samples if n == 0) / len(samples)
    assert idle > 0.5, f"a connection was out {1 - idle:.0%} of the turn"
