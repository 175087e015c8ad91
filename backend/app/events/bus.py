"""Fan-out of the action log to subscribers, in `serverSeq` order.

The log is the source of truth; notifications are only wake-ups. One pump per
process reads new entries in order and hands them to matching subscribers. It wakes
on a local commit, on a Postgres NOTIFY from any process, or every second as a
fallback, so a lost notification delays delivery but never drops an action.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from app.config import Settings
from app.db.engine import Database
from app.db.models import ActionLogEntry
from app.events import log as action_log

logger = logging.getLogger("haico.events")

POLL_SECONDS = 1.0


@dataclass(eq=False)
class Subscription:
    root_thread_ids: set[str] | None
    queue: asyncio.Queue[ActionLogEntry] = field(default_factory=asyncio.Queue)

    def wants(self, entry: ActionLogEntry) -> bool:
        return self.root_thread_ids is None or entry.root_thread_id in self.root_thread_ids


class EventBus:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.last_seq = 0
        self._subs: set[Subscription] = set()
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._listener: Any = None

    async def start(self) -> None:
        async with self.db.read() as s:
            _, self.last_seq = await action_log.bounds(s)
        self.db.commit_listeners.append(self.wake)
        if self.settings.is_postgres:
            await self._listen()
        self._pump = asyncio.create_task(self._run())

    async def _listen(self) -> None:
        import asyncpg

        try:
            self._listener = await asyncpg.connect(self.settings.checkpoint_url)
            await self._listener.add_listener(action_log.NOTIFY_CHANNEL, lambda *_: self.wake())
        except Exception:
            logger.exception("LISTEN failed; falling back to polling the action log")
            self._listener = None

    def wake(self) -> None:
        self._wake.set()

    async def close(self) -> None:
        if self.wake in self.db.commit_listeners:
            self.db.commit_listeners.remove(self.wake)
        if self._pump:
            self._pump.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._pump
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close()

    async def _run(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=POLL_SECONDS)
            self._wake.clear()
            try:
                await self._drain()
            except Exception:
                logger.exception("reading the action log failed")
                await asyncio.sleep(POLL_SECONDS)

    async def _drain(self) -> None:
        while True:
            async with self.db.read() as s:
                entries = await action_log.read_after(s, after=self.last_seq)
            for entry in entries:
                self.last_seq = entry.seq
                for sub in list(self._subs):
                    if sub.wants(entry):
                        sub.queue.put_nowait(entry)
            if len(entries) < 500:
                return

    async def stream(
        self, *, root_thread_ids: set[str] | None, after: int
    ) -> AsyncGenerator[ActionLogEntry, None]:
        """Entries with seq > `after`: the logged gap first, then live ones, in order."""
        sub = Subscription(root_thread_ids)
        self._subs.add(sub)
        delivered = after
        try:
            while True:
                async with self.db.read() as s:
                    page = await action_log.read_after(
                        s, after=delivered, root_thread_ids=root_thread_ids
                    )
                for entry in page:
                    delivered = entry.seq
                    yield entry
                if len(page) < 500:
                    break
            while True:
                entry = await sub.queue.get()
                if entry.seq <= delivered:
                    continue
                delivered = entry.seq
                yield entry
        finally:
            self._subs.discard(sub)
