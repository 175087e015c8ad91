"""Streamed reply text as logged actions: every running turn of a process, one
transaction per tick.

Each running turn's text is buffered and logged as `chat/delta` actions (the first
one also opens the turn's markdown response part), at most ~20 a second per turn.
One writer per process logs what *every* turn buffered in one transaction per tick:
appends to the action log queue behind one global lock (`events.log`), so a
transaction per turn per tick made the commits of many streaming turns wait for each
other, and the process spend most of its time on them.

Order. A turn's items are logged in the order they were added. A write holds `_lock`
from taking the items to its commit, so a later write (or `take`, which waits for
it) never overtakes an earlier one. A tool call is an item like the text, written at
once (`add_now`), so the log keeps text and tool calls in order. The turn's last text
leaves with `take`, in the transaction that ends the turn.

Failure. A batch whose transaction fails is put back in front of what was buffered
since, and the next tick tries again; nothing is dropped while the process lives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field

from haico.db.engine import Database
from haico.db.outage import log_failure
from haico.events import actions
from haico.events import log as action_log
from haico.process import background

logger = logging.getLogger("haico.events")

# Buffered text of a turn (joined into one chat/delta when written) or an action.
Item = list[str] | actions.Action


@dataclass
class _Turn:
    root_thread_id: str
    turn_id: str
    part_id: str
    items: list[Item] = field(default_factory=list)
    started: bool = False

    def actions(self, items: list[Item]) -> list[actions.Action]:
        return [
            actions.delta(self.turn_id, self.part_id, "".join(i)) if isinstance(i, list) else i
            for i in items
        ]


class DeltaLog:
    """The buffered text (and tool calls) of this process's running turns; see the
    module doc."""

    INTERVAL = 0.05
    MAX_BACKOFF = 40  # × INTERVAL

    def __init__(self, db: Database) -> None:
        self.db = db
        self._turns: dict[str, _Turn] = {}
        self._lock = asyncio.Lock()
        self._writer: asyncio.Task[None] | None = None

    @staticmethod
    def part_id(turn_id: str) -> str:
        return f"{turn_id}:md"

    def open(self, root_thread_id: str, turn_id: str) -> None:
        self._turns[turn_id] = _Turn(root_thread_id, turn_id, self.part_id(turn_id))

    def add_text(self, turn_id: str, text: str) -> None:
        turn = self._turns[turn_id]
        if not turn.started:
            turn.started = True
            turn.items.append(actions.response_part(turn_id, turn.part_id))
        if turn.items and isinstance(turn.items[-1], list):
            turn.items[-1].append(text)
        else:
            turn.items.append([text])
        if self._writer is None or self._writer.done():
            self._writer = asyncio.create_task(self._write_ticks(), name="delta log")

    async def add_now(self, turn_id: str, action: actions.Action) -> None:
        """Log `action` after the turn's buffered text, now (with every turn's text)."""
        self._turns[turn_id].items.append(action)
        await self.flush()

    async def take(self, turn_id: str) -> list[actions.Action]:
        """Close the turn: its actions not yet written, for the caller to log in the
        transaction that ends the turn (or `give_back` if that fails)."""
        async with self._lock:
            turn = self._turns.pop(turn_id, None)
        return turn.actions(turn.items) if turn is not None else []

    async def give_back(self, root_thread_id: str, taken: list[actions.Action]) -> None:
        """Write what `take` returned on its own (its closing transaction failed)."""
        if taken:
            async with self._lock, self.db.one_statement() as s:
                await action_log.append_chat(s, root_thread_id, *taken)

    async def flush(self) -> None:
        """Write every turn's buffered items in one transaction."""
        async with self._lock:
            batch = [(t, t.items) for t in self._turns.values() if t.items]
            if not batch:
                return
            for turn, _ in batch:
                turn.items = []
            try:
                rows: list[tuple[str | None, str, actions.Action]] = [
                    (turn.root_thread_id, action_log.chat_channel(turn.root_thread_id), action)
                    for turn, items in batch
                    for action in turn.actions(items)
                ]
                async with self.db.one_statement() as s:
                    await action_log.append_rows(s, rows)
            except BaseException:
                for turn, items in batch:
                    turn.items[:0] = items
                raise

    async def _write_ticks(self) -> None:
        failures = 0
        while any(t.items for t in self._turns.values()):
            # Failed writes are retried less and less often (up to every 2 s) and
            # logged once per run of failures; the text waits in memory meanwhile.
            await asyncio.sleep(self.INTERVAL * min(2**failures, self.MAX_BACKOFF))
            try:
                await self.flush()
            except Exception as exc:
                if failures == 0:
                    log_failure(logger, "logging streamed text failed; retrying", exc)
                failures += 1
            else:
                if failures:
                    logger.warning("logging streamed text works again (%d failed tries)", failures)
                failures = 0

    async def close(self) -> None:
        await background.stop(self._writer)
        with contextlib.suppress(Exception):
            await self.flush()
