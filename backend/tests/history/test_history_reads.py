"""GET …/history answers one moment of the family: the head and the active turn as
they stood together, never a mix of before and after a turn's close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.util import await_only

from haico.services.turns.closing import Closer
from tests.helpers import db_of
from tests.history_helpers import graph, history, new_thread
from tests.sse_client import send_turn

T = TypeVar("T")


async def test_a_history_read_during_a_turns_close_sees_it_running_or_done(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn closes (node stored, head moved onto it, lease gone: one commit) right
    after the history request has read the family's head row. The answer is the turn
    still running on the old head, or done with the head on its node; never neither
    (no active turn and the head where it was before the turn: the turn looks lost)."""
    tid = await new_thread(client)
    async with _closing_during(app, client, monkeypatch, tid, "chat_heads") as read:
        h = await read(history(client, tid))
    running = h["active_turn"] is not None and h["active_turn"]["turn_id"] == f"{tid}:1"
    done = h["active_turn"] is None and h["head_turn_id"] == f"{tid}:1"
    assert running or done, h
    if running:
        assert h["head_turn_id"] is None, h
    h = await history(client, tid)
    assert h["active_turn"] is None and h["head_turn_id"] == f"{tid}:1", h


async def test_a_graph_read_during_a_turns_close_never_puts_the_head_on_a_running_step(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph is read in several statements (the nodes, then the head). The turn
    closes right after the nodes were read: the answer is from before the close (the
    step drawn running, the head where it was) or after it (the step complete, the head
    on it), never the head on a step still drawn as running."""
    tid = await new_thread(client)
    async with _closing_during(app, client, monkeypatch, tid, "workspace_snapshots") as read:
        g = await read(graph(client, tid))
    states = {n["id"]: n["state"] for n in g["nodes"]}
    before = g["head_turn_id"] is None and states.get(f"{tid}:1") in (None, "running")
    after = g["head_turn_id"] == f"{tid}:1" and states.get(f"{tid}:1") == "complete"
    assert before or after, g
    g = await graph(client, tid)
    assert g["head_turn_id"] == f"{tid}:1", g
    assert {n["id"]: n["state"] for n in g["nodes"]} == {f"{tid}:1": "complete"}, g


@asynccontextmanager
async def _closing_during(
    app: FastAPI,
    client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    tid: str,
    table: str,
) -> AsyncIterator[Callable[[Awaitable[T]], Awaitable[T]]]:
    """Sends a turn and holds its close; `read(request)` then runs the request and lets
    the close commit right after the request's first read of `table`. On leaving, the
    turn's stream has ended normally."""
    db = db_of(app)
    closing, gate, asked = asyncio.Event(), asyncio.Event(), asyncio.Event()
    closer: list[asyncio.Task[Any] | None] = []
    close = Closer.close

    async def gated_close(self: Closer, *args: Any, **kwargs: Any) -> Any:
        closer.append(asyncio.current_task())
        closing.set()
        await gate.wait()
        return await close(self, *args, **kwargs)  # the action that ends the turn

    transaction = db.transaction

    @asynccontextmanager
    async def noted_transaction() -> AsyncIterator[AsyncSession]:
        if closer and asyncio.current_task() is closer[0]:
            asked.set()  # SQLite: the close now queues for the write lock
        async with transaction() as s:
            yield s

    monkeypatch.setattr(Closer, "close", gated_close)
    monkeypatch.setattr(db, "transaction", noted_transaction)
    sent = asyncio.create_task(send_turn(client, tid, "objective: closing"))
    async with asyncio.timeout(30):
        await closing.wait()  # the reply is done; the lease is still held

    async def the_close_ran() -> None:
        gate.set()
        if db.is_sqlite:
            # This read's transaction holds the write lock: the close waits behind it.
            await asked.wait()
        else:
            await asyncio.shield(sent)  # the stream ends once the close has committed

    async def read(request: Awaitable[T]) -> T:
        with _after_reading(db.engine.sync_engine, table, the_close_ran) as hooked:
            async with asyncio.timeout(30):
                answer = await request
        assert hooked == [True]
        return answer

    yield read
    async with asyncio.timeout(30):
        status, events, _ = await sent
    assert status == 200 and events[-1][0] == "turn_completed", events[-1]


class _after_reading:
    """Runs `then` (awaited) once, right after the first statement that reads `table`
    has fetched its rows; the list it yields records that it ran."""

    def __init__(self, engine: Any, table: str, then: Callable[[], Any]) -> None:
        self.engine = engine
        self.table = table
        self.then = then
        self.ran: list[bool] = []

    def _hook(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if self.ran or not statement.lstrip().upper().startswith("SELECT"):
            return
        if self.table not in statement:
            return
        self.ran.append(True)
        # Inside SQLAlchemy's greenlet: wait here on the event loop.
        await_only(self.then())

    def __enter__(self) -> list[bool]:
        event.listen(self.engine, "after_cursor_execute", self._hook)
        return self.ran

    def __exit__(self, *_: Any) -> None:
        event.remove(self.engine, "after_cursor_execute", self._hook)
