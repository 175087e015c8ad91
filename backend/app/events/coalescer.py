"""Streamed reply text as logged actions, coalesced to at most ~20 per second per turn."""

from __future__ import annotations

import asyncio

from app.db.engine import Database
from app.events import actions
from app.events import log as action_log


class DeltaCoalescer:
    """Buffers a turn's streamed text and logs it as `chat/delta` actions.

    The first flush also opens the turn's markdown response part. Each flush is one
    transaction, so followers see the reply grow while the turn runs.
    """

    INTERVAL = 0.05

    def __init__(self, db: Database, *, root_thread_id: str, turn_id: str) -> None:
        self.db = db
        self.root_thread_id = root_thread_id
        self.turn_id = turn_id
        self.part_id = f"{turn_id}:md"
        self.buffer: list[str] = []
        self.started = False
        self.last_flush = 0.0

    async def add(self, text: str) -> None:
        self.buffer.append(text)
        if asyncio.get_running_loop().time() - self.last_flush >= self.INTERVAL:
            await self.flush()

    async def flush(self) -> None:
        if not self.buffer:
            return
        text, self.buffer = "".join(self.buffer), []
        self.last_flush = asyncio.get_running_loop().time()
        logged = [actions.delta(self.turn_id, self.part_id, text)]
        if not self.started:
            self.started = True
            logged.insert(0, actions.response_part(self.turn_id, self.part_id))
        async with self.db.transaction() as s:
            await action_log.append_chat(s, self.root_thread_id, *logged)
