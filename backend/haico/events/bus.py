"""Fan-out of the action log to subscribers, in `serverSeq` order.

The log is the source of truth; notifications are only wake-ups. One pump per
process reads new entries in order and hands them to matching subscribers. It wakes
on a Postgres NOTIFY from another process (its own NOTIFYs are skipped: the commit
already told the bus), or every `HAICO_EVENT_POLL_SECONDS` as a fallback (0 turns the
poll off), so a lost notification delays delivery but never drops an action. A
NOTIFY names the `seq`s and families it is about: when no subscriber of this process
follows those families and nothing comes before them unread, the pump moves past
them without reading them, so N processes do not each read every other one's commits.

A local commit hands the bus the entries it appended. Sequence numbers are committed
in order (`events.log`), so when they follow on from the last entry handed out they
are handed out at once, without reading them back; when they do not (another
process's entries, or the hole an append that rolled back left, come first), the
pump is woken to read the log from where it is. Subscriptions are indexed by family,
so handing out an entry costs the subscribers of its family, not every subscriber of
the process. The LISTEN connection is watched: when it drops, it is opened again
(with backoff) and the pump reads the log from where it was, so whatever was
committed meanwhile is replayed in order.

A subscription may be bounded (`stream(limit=…)`: the event stream's followers are,
by `HAICO_SSE_QUEUE_SIZE`): a reader that lets more entries pile up than that is
dropped at once, its queue freed, and its stream ends; the log still holds every
entry, so it resumes from the last one it took.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncGenerator, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Any

from haico.config import Settings
from haico.db.engine import Database
from haico.db.outage import log_failure
from haico.domain import LoggedAction
from haico.events import log as action_log
from haico.process import background

logger = logging.getLogger("haico.events")

# The LISTEN connection's application_name, so operators (and tests) can find it.
LISTEN_APP = "haico-listen"

RECONNECT_SECONDS = (0.1, 0.5, 1.0, 2.0, 5.0)
# A read of the log that takes longer than this is abandoned and tried again.
DRAIN_TIMEOUT_SECONDS = 30.0


class Overflowed(Exception):
    """A stream's reader fell too far behind (`Subscription.limit`): its stream ends."""


@dataclass(eq=False)
class Subscription:
    root_thread_ids: set[str] | None
    # Entries handed out and not yet taken, at most `limit` (None: no limit). A reader
    # that lets more pile up has `overflowed`: what it held is dropped and its stream
    # ends; the log still has every entry, so it can start again from where it was.
    limit: int | None = None
    overflowed: bool = False
    # None ends the stream (the server is shutting down, or the reader overflowed).
    queue: asyncio.Queue[LoggedAction | None] = field(default_factory=asyncio.Queue)

    def offer(self, entry: LoggedAction) -> bool:
        """Queue `entry`; False when the reader has now fallen too far behind."""
        if self.limit is not None and self.queue.qsize() >= self.limit:
            self.overflowed = True
            while not self.queue.empty():
                self.queue.get_nowait()
            self.queue.put_nowait(None)
            logger.warning(
                "an event-stream follower of %s is not reading (%d actions waiting); "
                "ending its stream, it resumes from the log",
                entry.root_thread_id,
                self.limit,
            )
            return False
        self.queue.put_nowait(entry)
        return True


class EventBus:
    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.last_seq = 0
        # Subscriptions by family root (None: every family).
        self._subs: dict[str | None, set[Subscription]] = {}
        self._wake = asyncio.Event()
        self._pump: asyncio.Task[None] | None = None
        self._listener: Any = None
        self._reconnect: asyncio.Task[None] | None = None
        self._closing = False
        self.ending = False
        self.poll_seconds = settings.event_poll_seconds

    async def start(self) -> None:
        async with self.db.read() as s:
            _, self.last_seq = await action_log.bounds(s)
        self.db.commit_listeners.append(self.committed)
        if self.settings.is_postgres and not await self._listen():
            self._reconnect = asyncio.create_task(self._relisten())
        self._pump = asyncio.create_task(self._run())
        self._pump.add_done_callback(self._pump_ended)

    async def _listen(self) -> bool:
        import asyncpg

        try:
            conn = await asyncpg.connect(
                self.settings.checkpoint_url, server_settings={"application_name": LISTEN_APP}
            )
            await conn.add_listener(action_log.NOTIFY_CHANNEL, self._on_notify)
            conn.add_termination_listener(self._on_lost)
        except Exception as exc:
            log_failure(
                logger, "LISTEN failed; retrying, and polling the action log meanwhile", exc
            )
            self._listener = None
            return False
        self._listener = conn
        # Whatever was committed while no one listened is in the log: read it now.
        self.wake()
        return True

    def _on_notify(self, _conn: Any, _pid: int, _channel: str, payload: str) -> None:
        notice = action_log.parse_notice(payload)
        if notice is None:
            self.wake()  # a payload of another form: read, to be safe
        elif notice.origin != action_log.ORIGIN:
            self.noticed(notice)

    def noticed(self, notice: action_log.Notice) -> None:
        """Another process committed entries `notice.lo`..`notice.hi`. When no
        subscriber here follows their families and they are the very next entries,
        move past them without reading them; otherwise wake the pump to read them.

        Notifications arrive in commit order, which is `seq` order, so entries that
        follow on from `last_seq` leave no gap behind. A notice can come after a read
        that already saw its entries (this process's own later commit made the pump
        read): then there is nothing to do. A subscriber that starts later reads
        whatever it missed from the log itself (`stream`)."""
        if notice.hi <= self.last_seq:
            return  # a read already handed these out (or moved past them)
        if self._wake.is_set() or notice.lo != self.last_seq + 1 or self._follows(notice):
            self.wake()
            return
        self.last_seq = notice.hi

    def _follows(self, notice: action_log.Notice) -> bool:
        """Whether a subscriber here wants any entry of these families."""
        if notice.families is None or None in self._subs:
            return True
        return any(root in self._subs for root in notice.families)

    def _on_lost(self, *_: Any) -> None:
        if self._closing:
            return
        logger.warning("the LISTEN connection dropped; reconnecting")
        self._listener = None
        if self._reconnect is None or self._reconnect.done():
            self._reconnect = asyncio.get_running_loop().create_task(self._relisten())

    async def _relisten(self) -> None:
        attempt = 0
        while not self._closing and not await self._listen():
            await asyncio.sleep(RECONNECT_SECONDS[min(attempt, len(RECONNECT_SECONDS) - 1)])
            attempt += 1

    def wake(self) -> None:
        self._wake.set()

    def committed(self, entries: Sequence[LoggedAction]) -> None:
        """A transaction of this process committed `entries` (ascending `seq`s): hand
        them out now if they follow on from the last entry handed out, else wake the
        pump (see the module doc)."""
        follows = entries[0].seq == self.last_seq + 1
        if follows and all(b.seq == a.seq + 1 for a, b in pairwise(entries)):
            self._hand_out(entries)
        else:
            self.wake()

    def _hand_out(self, entries: Sequence[LoggedAction]) -> None:
        """Give each entry past `last_seq` to its subscribers, in order. No await: an
        entry is handed out and counted in `last_seq` in one step."""
        everyone = self._subs.get(None, ())
        for entry in entries:
            if entry.seq <= self.last_seq:
                continue  # handed out already, by a local commit during the read
            self.last_seq = entry.seq
            for sub in (*everyone, *self._subs.get(entry.root_thread_id, ())):
                if not sub.offer(entry):
                    self._unsubscribe(sub)

    def end_streams(self) -> None:
        """End every open stream, and any opened from now on, after what it has been
        handed: the server is shutting down, and an endless response would hold it."""
        self.ending = True
        for subs in self._subs.values():
            for sub in subs:
                sub.queue.put_nowait(None)

    async def close(self) -> None:
        self._closing = True
        await background.stop(self._reconnect)
        if self.committed in self.db.commit_listeners:
            self.db.commit_listeners.remove(self.committed)
        await background.stop(self._pump)
        if self._listener is not None:
            with contextlib.suppress(Exception):
                await self._listener.close(timeout=5)

    async def _run(self) -> None:
        # `asyncio.timeout`, not `wait_for`: on Python 3.11 `wait_for` can swallow the
        # cancellation that stops the pump (see `haico.process.background`).
        while not self._closing:
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(self.poll_seconds or None):
                    await self._wake.wait()
            self._wake.clear()
            try:
                # A read that hangs (a lost connection, a stuck lock) is given up and
                # tried again, instead of stopping the fan-out for good.
                async with asyncio.timeout(DRAIN_TIMEOUT_SECONDS):
                    await self._drain()
            except Exception as exc:
                log_failure(logger, "reading the action log failed", exc)
                await asyncio.sleep(self.poll_seconds or 1.0)
                self.wake()

    def _pump_ended(self, task: asyncio.Task[None]) -> None:
        """The pump never stops while the bus is open: if it does, log why and restart it."""
        if self._closing:
            return
        if task.cancelled():
            logger.error("the action-log pump was cancelled; restarting it")
        else:
            logger.error("the action-log pump stopped; restarting it", exc_info=task.exception())
        self._pump = asyncio.get_running_loop().create_task(self._run())
        self._pump.add_done_callback(self._pump_ended)

    async def _drain(self) -> None:
        while True:
            async with self.db.read() as s:
                entries = await action_log.read_after(s, after=self.last_seq)
            self._hand_out(entries)
            if len(entries) < 500:
                return

    async def stream(
        self, *, root_thread_ids: set[str] | None, after: int, limit: int | None = None
    ) -> AsyncGenerator[LoggedAction, None]:
        """Entries with seq > `after`: the logged gap first, then live ones, in order.

        A reader that falls `limit` entries behind the live ones (it takes them more
        slowly than they come) sees its stream end there, with `Overflowed` raised
        (see `Subscription`); without a limit they wait for it however many."""
        sub = Subscription(root_thread_ids, limit)
        keys: list[str | None] = [None] if root_thread_ids is None else list(root_thread_ids)
        for key in keys:
            self._subs.setdefault(key, set()).add(sub)
        delivered = after
        try:
            # Nothing after `after` has been handed out yet: every such entry reaches
            # the queue (the pump hands out entries with no await in between), so
            # there is no gap to read from the log.
            caught_up = after >= self.last_seq
            while not caught_up and not self.ending:
                async with self.db.read() as s:
                    page = await action_log.read_after(
                        s, after=delivered, root_thread_ids=root_thread_ids
                    )
                for entry in page:
                    delivered = entry.seq
                    yield entry
                caught_up = len(page) < 500
            while not self.ending:
                live = await sub.queue.get()
                if live is None:
                    if sub.overflowed:
                        raise Overflowed(f"fell behind after {delivered}")
                    return
                if live.seq <= delivered:
                    continue
                delivered = live.seq
                yield live
        finally:
            self._unsubscribe(sub)

    def _unsubscribe(self, sub: Subscription) -> None:
        keys: list[str | None] = (
            [None] if sub.root_thread_ids is None else list(sub.root_thread_ids)
        )
        for key in keys:
            subs = self._subs.get(key)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[key]
