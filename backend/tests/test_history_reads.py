"""GET …/history answers one moment of the family: the head and the active turn as
they stood together, never a mix of before and after a turn's close."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.util import await_only

from app.services.turns import TurnManager
from tests.helpers import db_of
from tests.history_helpers import history, new_thread
from tests.sse_client import send_turn


async def test_a_history_read_during_a_turns_close_sees_it_running_or_done(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The turn closes (node stored, head moved onto it, lease gone: one commit) right
    after the history request has read the family's head row. The answer is the turn
    still running on the old head, or done with the head on its node; never neither
    (no active turn and the head where it was before the turn: the turn looks lost)."""
    db = db_of(app)
    tid = await new_thread(client)
    closing, gate, asked = asyncio.Event(), asyncio.Event(), asyncio.Event()
    closer: list[asyncio.Task[Any] | None] = []
    close = TurnManager._close

    async def gated_close(self: TurnManager, *args: Any, **kwargs: Any) -> None:
        closer.append(asyncio.current_task())
        closing.set()
        await gate.wait()
        await close(self, *args, **kwargs)

    transaction = db.transaction

    @asynccontextmanager
    async def noted_transaction() -> AsyncIterator[AsyncSession]:
        if closer and asyncio.current_task() is closer[0]:
            asked.set()  # SQLite: the close now queues for the write lock
        async with transaction() as s:
            yield s

    monkeypatch.setattr(TurnManager, "_close", gated_close)
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

    with _after_the_head_is_read(db.engine.sync_engine, the_close_ran) as hooked:
        async with asyncio.timeout(30):
            h = await history(client, tid)
    assert hooked == [True]
    running = h["active_turn"] is not None and h["active_turn"]["turn_id"] == f"{tid}:1"
    done = h["active_turn"] is None and h["head_turn_id"] == f"{tid}:1"
    assert running or done, h
    if running:
        assert h["head_turn_id"] is None, h

    async with asyncio.timeout(30):
        status, events, _ = await sent
    assert status == 200 and events[-1][0] == "turn_completed", events[-1]
    h = await history(client, tid)
    assert h["active_turn"] is None and h["head_turn_id"] == f"{tid}:1", h


class _after_the_head_is_read:
    """Runs `then` (awaited) once, right after the first statement that reads the
    family's head row has fetched its rows; the list it yields records that it ran."""

    def __init__(self, engine: Any, then: Callable[[], Any]) -> None:
        self.engine = engine
        self.then = then
        self.ran: list[bool] = []

    def _hook(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if self.ran or not statement.lstrip().upper().startswith("SELECT"):
            return
        if "chat_heads" not in statement:
            return
        self.ran.append(True)
        # Inside SQLAlchemy's greenlet: wait here on the event loop.
        await_only(self.then())

    def __enter__(self) -> list[bool]:
        event.listen(self.engine, "after_cursor_execute", self._hook)
        return self.ran

    def __exit__(self, *_: Any) -> None:
        event.remove(self.engine, "after_cursor_execute", self._hook)
