"""Helpers for the history tests: checkout calls, row counts, an in-process server
(the ASGI test transport buffers whole responses, so an endless SSE stream needs a
real socket) and an SSE reader for GET …/events."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import uvicorn
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.db.models import ActionLogEntry, Conversation, ConversationBranch
from tests.helpers import db_of
from tests.server import free_port
from tests.sse_client import send_turn


async def new_thread(client: httpx.AsyncClient, title: str = "H") -> str:
    r = await client.post("/api/conversations", json={"title": title})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def turn_ok(client: httpx.AsyncClient, thread_id: str, content: str, **params: Any) -> Any:
    status, events, body = await send_turn(client, thread_id, content, **params)
    assert status == 200, body
    assert events[-1][0] == "turn_completed", events[-1]
    return events


async def thread_with_turns(client: httpx.AsyncClient, n: int = 3) -> str:
    """A root thread with n turns; turn k sets the objective to `step k` and adds a todo."""
    tid = await new_thread(client)
    for k in range(1, n + 1):
        await turn_ok(client, tid, f"objective: step {k}; todo: t{k}")
    return tid


async def history(client: httpx.AsyncClient, thread_id: str) -> dict[str, Any]:
    r = await client.get(f"/api/conversations/{thread_id}/history")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def wait_for_active_turn(client: httpx.AsyncClient, thread_id: str) -> dict[str, Any]:
    """The family's running turn, once the server has opened it (a sent turn opens
    after its request is read, which under load can take a while)."""
    async with asyncio.timeout(30):
        while True:
            active: dict[str, Any] | None = (await history(client, thread_id))["active_turn"]
            if active is not None:
                return active
            await asyncio.sleep(0.05)


async def checkout(
    client: httpx.AsyncClient, thread_id: str, turn_id: str | None, **kw: Any
) -> httpx.Response:
    return await client.post(
        f"/api/conversations/{thread_id}/checkout", json={"turn_id": turn_id, **kw}
    )


async def workspace(
    client: httpx.AsyncClient, thread_id: str, as_of: int | None = None
) -> dict[str, Any]:
    params = {"as_of_turn": as_of} if as_of is not None else {}
    r = await client.get(f"/api/conversations/{thread_id}/workspace", params=params)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def without_ids(ws: dict[str, Any]) -> dict[str, Any]:
    """A workspace with row ids dropped (copies have new rows but the same uids)."""
    out = dict(ws)
    for key in ("preferences", "todos", "artifacts"):
        out[key] = [{k: v for k, v in item.items() if k != "id"} for item in ws[key]]
    return out


async def draft_ids(app: FastAPI, root: str | None = None) -> list[str]:
    async with db_of(app).read() as s:
        stmt = select(ConversationBranch.thread_id).where(ConversationBranch.status == "draft")
        if root is not None:
            stmt = stmt.join(
                Conversation, Conversation.thread_id == ConversationBranch.thread_id
            ).where(Conversation.root_thread_id == root)
        return sorted(str(t) for t in (await s.execute(stmt)).scalars())


async def family_thread_ids(app: FastAPI, root: str) -> list[str]:
    async with db_of(app).read() as s:
        rows = await s.execute(
            select(Conversation.thread_id).where(Conversation.root_thread_id == root)
        )
        return sorted(str(t) for t in rows.scalars())


async def family_size(app: FastAPI, root: str) -> int:
    """How many threads the family holds (hidden ones included)."""
    async with db_of(app).read() as s:
        stmt = select(func.count()).where(Conversation.root_thread_id == root)
        return int(await s.scalar(stmt) or 0)


async def log_size(app: FastAPI, root: str) -> int:
    """How many actions the family's log holds."""
    async with db_of(app).read() as s:
        stmt = select(func.count()).where(ActionLogEntry.root_thread_id == root)
        return int(await s.scalar(stmt) or 0)


async def graph(client: httpx.AsyncClient, thread_id: str) -> dict[str, Any]:
    r = await client.get(f"/api/conversations/{thread_id}/graph")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


@contextlib.asynccontextmanager
async def live_server(app: FastAPI) -> AsyncIterator[str]:
    """Serve an already started app on a real socket in this event loop."""
    port = free_port()
    config = uvicorn.Config(
        app,
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        timeout_graceful_shutdown=1,
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve())
    deadline = time.monotonic() + 20
    while not server.started:
        assert not task.done(), "in-process server exited"
        assert time.monotonic() < deadline, "in-process server did not start"
        await asyncio.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        with contextlib.suppress(Exception):
            await asyncio.wait_for(task, timeout=10)


async def read_events(
    base_url: str,
    thread_id: str,
    *,
    after: int = 0,
    until: Callable[[list[dict[str, Any]]], bool],
    wait: float = 15.0,
    ready: asyncio.Event | None = None,
) -> list[dict[str, Any]]:
    """Read GET …/events?after=N until `until(events)` holds; every event is `action`."""
    events: list[dict[str, Any]] = []

    async def run() -> None:
        async with (
            httpx.AsyncClient(base_url=base_url, timeout=None) as c,
            c.stream("GET", f"/api/conversations/{thread_id}/events", params={"after": after}) as r,
        ):
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/event-stream")
            if ready is not None:
                ready.set()
            buf = ""
            async for chunk in r.aiter_text():
                buf += chunk
                while "\n\n" in buf:
                    block, buf = buf.split("\n\n", 1)
                    name, data = None, []
                    for line in block.splitlines():
                        if line.startswith("event:"):
                            name = line[6:].strip()
                        elif line.startswith("data:"):
                            data.append(line[5:].strip())
                    if not data:
                        continue  # a keepalive comment
                    assert name == "action", block
                    events.append(json.loads("\n".join(data)))
                    if until(events):
                        return

    try:
        await asyncio.wait_for(run(), timeout=wait)
    except TimeoutError as exc:
        raise AssertionError(f"events never satisfied the condition; got {events}") from exc
    return events


def actions(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["action"] for e in events if e["action"].get("type") == kind]


def has_action(kind: str, **fields: Any) -> Callable[[list[dict[str, Any]]], bool]:
    def check(events: list[dict[str, Any]]) -> bool:
        return any(all(a.get(k) == v for k, v in fields.items()) for a in actions(events, kind))

    return check
