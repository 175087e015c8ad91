"""Clients of the stack under test: a turn's SSE as it arrives, and the family's event
stream followed as an EventSource follows it (reconnecting with Last-Event-ID)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

API = "/api/conversations"
Json = dict[str, Any]


def blocks(buf: str) -> tuple[list[dict[str, str]], str]:
    """Complete SSE events in `buf` (their fields), and what is left of it."""
    events = []
    while "\n\n" in buf:
        block, buf = buf.split("\n\n", 1)
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            if key:
                fields[key] = fields.get(key, "") + value.removeprefix(" ")
        if "data" in fields:
            events.append(fields)
    return events, buf


async def new_family(c: httpx.AsyncClient, title: str) -> str:
    r = await c.post(API, json={"title": title})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


@dataclass
class Turn:
    """A turn posted, its SSE read as it arrives: (arrival, event name, data)."""

    headers: dict[str, str] = field(default_factory=dict)
    events: list[tuple[float, str, Json]] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, base: str, tid: str, content: str) -> None:
        async with (
            httpx.AsyncClient(
                base_url=base, headers=self.headers, timeout=httpx.Timeout(30, read=60)
            ) as c,
            c.stream("POST", f"{API}/{tid}/turns", json={"content": content}) as r,
        ):
            assert r.status_code == 200, await r.aread()
            buf = ""
            async for chunk in r.aiter_text():
                events, buf = blocks(buf + chunk)
                for e in events:
                    self.events.append(
                        (time.monotonic(), e.get("event", ""), json.loads(e["data"]))
                    )
                    self.started.set()

    @property
    def node_id(self) -> str:
        return str(next(d["node_id"] for _, n, d in self.events if n == "turn_started"))

    @property
    def completed(self) -> bool:
        return bool(self.events) and self.events[-1][1] == "turn_completed"


@dataclass
class Follower:
    """GET …/events as an EventSource follows it: when the connection ends or breaks,
    it connects again with `Last-Event-ID`. Each connection's (opened, first event,
    last event) times are kept, so the gap a cut causes can be measured."""

    base: str
    tid: str
    headers: dict[str, str] = field(default_factory=dict)
    # (arrival, serverSeq, envelope) of every action received, over every connection.
    got: list[tuple[float, int, Json]] = field(default_factory=list)
    connections: int = 0
    # When each connection was answered, and when each one broke.
    opens: list[float] = field(default_factory=list)
    cuts: list[float] = field(default_factory=list)
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    last_id: int = 0

    async def run(self, until: Callable[[Json], bool]) -> None:
        async with httpx.AsyncClient(
            base_url=self.base, headers=self.headers, timeout=httpx.Timeout(30, read=60)
        ) as c:
            while True:
                self.connections += 1
                with contextlib.suppress(httpx.TransportError):
                    async with c.stream(
                        "GET",
                        f"{API}/{self.tid}/events",
                        headers={"Last-Event-ID": str(self.last_id)},
                    ) as r:
                        assert r.status_code == 200, await r.aread()
                        self.opens.append(time.monotonic())
                        self.opened.set()
                        buf = ""
                        async for chunk in r.aiter_text():
                            events, buf = blocks(buf + chunk)
                            for e in events:
                                envelope = json.loads(e["data"])
                                self.last_id = int(e["id"])
                                self.got.append((time.monotonic(), self.last_id, envelope))
                                if until(envelope):
                                    return
                self.cuts.append(time.monotonic())
                await asyncio.sleep(0.05)

    def seqs(self) -> list[int]:
        return [s for _, s, _ in self.got]

    def times(self) -> list[float]:
        return [t for t, _, _ in self.got]


def ends(node_id: str) -> Callable[[Json], bool]:
    return lambda env: (
        env["action"]["type"] == "chat/turnComplete" and env["action"].get("turnId") == node_id
    )


def ends_any(env: Json) -> bool:
    return bool(env["action"]["type"] == "chat/turnComplete")
