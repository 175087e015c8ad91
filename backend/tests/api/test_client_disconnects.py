"""A client that leaves a stream is no error: the server notes it at debug level and
loses nothing (a turn whose sender left goes on and is stored).

The app is driven as the ASGI server drives it, with a client whose socket stops
taking data and which then hangs up: the stream's producer has filled every buffer
between it and the socket by then (that is when FastAPI's SSE plumbing used to fail
with an `anyio.BrokenResourceError` group, logged as an unexpected error).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Callable, MutableMapping
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.services.turns.running import RunningTurn
from tests.history_helpers import history, new_thread, workspace

API = "/api/conversations"
# Items the stream's generator has handed out once every buffer behind the stalled
# socket is full: one being written, one in each of FastAPI's two one-item
# buffers, one waiting to enter them, and the one its producer now holds.
FULL = 5


class LeavingClient:
    """An ASGI client that takes the response's first chunk, then stalls until it
    hangs up (`leave`)."""

    def __init__(self, app: FastAPI, method: str, path: str, body: Any = None) -> None:
        self.app = app
        path, _, query = path.partition("?")
        raw = json.dumps(body).encode() if body is not None else b""
        self.body = raw
        self.scope = {
            "type": "http",
            "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": query.encode(),
            "root_path": "",
            "headers": [
                (b"host", b"test"),
                (b"content-type", b"application/json"),
                (b"content-length", str(len(raw)).encode()),
            ],
            "client": ("127.0.0.1", 50000),
            "server": ("test", 80),
        }
        self.gone = asyncio.Event()
        self.started = asyncio.Event()
        self.status = 0
        self._sent_body = False

    def leave(self) -> None:
        self.gone.set()

    async def _receive(self) -> dict[str, Any]:
        if not self._sent_body:
            self._sent_body = True
            return {"type": "http.request", "body": self.body, "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        elif message.get("body") and not self.gone.is_set():
            self.started.set()
            await self.gone.wait()  # the socket takes nothing more

    async def run(self) -> None:
        await self.app(self.scope, self._receive, self._send)


def counting(
    handed: asyncio.Event, stream: Callable[..., AsyncIterator[Any]]
) -> Callable[..., AsyncIterator[Any]]:
    """`stream`, setting `handed` once it has handed out `FULL` items."""

    async def wrapped(*args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        n = 0
        async for item in stream(*args, **kwargs):
            n += 1
            if n >= FULL:
                handed.set()
            yield item

    return wrapped


async def _leave_when_full(client: LeavingClient, handed: asyncio.Event) -> None:
    running = asyncio.create_task(client.run())
    async with asyncio.timeout(30):
        await client.started.wait()
        await handed.wait()
    for _ in range(10):
        await asyncio.sleep(0)  # the producers reach their blocked sends
    client.leave()
    async with asyncio.timeout(30):
        await running  # raised the error group before the fix
    assert client.status == 200


def _errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        f"{r.name} {r.levelname} {r.getMessage()}"
        for r in caplog.records
        if r.levelno >= logging.WARNING
    ]


def _left(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "haico.api" and r.levelno == logging.DEBUG and "left" in r.getMessage()
    ]


async def test_a_sender_leaving_its_turn_stream_loses_nothing(
    app: FastAPI,
    client: httpx.AsyncClient,
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    caplog.set_level(logging.DEBUG)
    tid = await new_thread(client)
    handed = asyncio.Event()
    monkeypatch.setattr(RunningTurn, "events", counting(handed, RunningTurn.events))
    words = " ".join(f"w{i}" for i in range(200))
    body = {"content": f"wait: 2\nobjective: left behind\nwrite: {words}"}
    await _leave_when_full(LeavingClient(app, "POST", f"{API}/{tid}/turns", body), handed)

    async with asyncio.timeout(30):  # the turn goes on without its sender
        while True:
            h = await history(client, tid)
            if h["active_turn"] is None:
                break
            await asyncio.sleep(0.05)
    assert h["head_turn_id"] == f"{tid}:1"
    ws = await workspace(client, tid)
    assert ws["objective"] == "left behind" and ws["document"]["content"] == words
    messages = (await client.get(f"{API}/{tid}/messages")).json()
    assert messages[-1]["role"] == "assistant" and messages[-1]["content"].startswith("Done.")
    assert _errors(caplog) == []
    assert _left(caplog) == [f"the client left POST {API}/{tid}/turns mid-response"]


async def test_a_follower_leaving_the_event_stream_is_no_error(
    app: FastAPI, client: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    tid = await new_thread(client)
    for i in range(2 * FULL):
        r = await client.put(f"{API}/{tid}/objective", json={"text": f"step {i}"})
        assert r.status_code == 200, r.text
    bus = app.state.bus
    handed = asyncio.Event()
    bus.stream = counting(handed, bus.stream)
    try:
        follower = LeavingClient(app, "GET", f"{API}/{tid}/events?after=0")
        await _leave_when_full(follower, handed)
    finally:
        del bus.stream
    assert _errors(caplog) == []
    assert _left(caplog) == [f"the client left GET {API}/{tid}/events mid-response"]
