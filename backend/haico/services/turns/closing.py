"""The one write that ends a turn: its node's state and reply, its provenance and search
entry, the head moving onto it, the lease released, and the last streamed text and the
turn's end logged, all in one transaction (PostgreSQL: one statement on the driver).

Failure: if the write fails nothing of it is kept; the turn's last text is then logged
on its own (best effort) and the lease stays until the sweep closes the turn as failed
(`services.turns.sweep`). `TurnManager._end` decides what the sender's stream gets.
"""

from __future__ import annotations

import logging

from haico.config import Settings
from haico.db.dialect import Write
from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as repo
from haico.domain import now
from haico.events import actions
from haico.events import log as action_log
from haico.events.coalescer import DeltaLog
from haico.services.families import titles
from haico.services.ledger import provenance as ledger
from haico.services.search import service as search
from haico.services.turns.running import RunningTurn, TurnEvent

log = logging.getLogger("haico.turns")

MAX_REPLY_CHARS = 20_000


class Closer:
    """Ends this process's turns (`TurnManager` holds one)."""

    def __init__(self, settings: Settings, db: Database, deltas: DeltaLog, process_id: str) -> None:
        self.settings = settings
        self.db = db
        self.deltas = deltas
        self.process_id = process_id

    async def finish(self, turn: RunningTurn, reply: str, final: TurnEvent) -> actions.Action:
        """Close the turn: node state and reply, the head moves onto it, the lease goes,
        and the turn's last streamed text is logged before its end; the action logged
        to end it.

        If the transaction fails, the text is logged on its own (best effort), so the
        sweep that later closes the turn finds the whole reply that was streamed.
        """
        duration = int((now() - turn.started_at).total_seconds() * 1000)
        pending = await self.deltas.take(turn.node_id)
        try:
            return await self.close(turn, reply, final, duration, pending)
        except BaseException:
            try:
                await self.deltas.give_back(turn.root_thread_id, pending)
            except Exception:
                log.exception("could not log the last text of turn %s", turn.node_id)
            raise

    async def close(
        self,
        turn: RunningTurn,
        reply: str,
        final: TurnEvent,
        duration: int,
        pending: list[actions.Action],
    ) -> actions.Action:
        measured = ledger.provenance_values(
            self.settings, turn.meter, duration_ms=duration, profile=turn.profile
        )
        turn.provenance = measured
        usage = actions.usage(turn.node_id, measured)
        if usage is not None:
            pending = [*pending, usage]
        ended = actions.turn_ended(
            turn.node_id,
            state=turn.state,
            duration_ms=duration,
            code=str(final.data.get("code", "error")),
            message=str(final.data.get("message", "")),
        )
        if self.db.dialect.is_postgres:
            # One statement, its own transaction, run on the driver: the index write
            # reads the document itself.
            index = search.turn_entries_write(
                turn.thread_id, turn.turn_index, turn.content, reply, turn.owner
            )
            async with self.db.driver() as d:
                await d.fault(Step.CLOSE)
                await action_log.append_chat_now(
                    d, turn.root_thread_id, *pending, ended, after=self.writes(turn, reply, index)
                )
            return ended
        # SQLite: the document read, then the writes, in one transaction.
        async with self.db.transaction() as s:
            entries = await search.turn_entries(
                s, turn.thread_id, turn.turn_index, turn.content, reply, owner=turn.owner
            )
            await fault(s, Step.CLOSE)
            await action_log.append_chat(
                s, turn.root_thread_id, *pending, ended, after=self.writes(turn, reply, entries)
            )
        return ended

    def writes(self, turn: RunningTurn, reply: str, index: Write | None) -> list[Write]:
        """The writes that close `turn` (with its search index write `index`)."""
        closing = [
            snap_repo.node_end(
                turn.thread_id,
                turn.turn_index,
                state=turn.state,
                completed_at=now(),
                reply=reply[:MAX_REPLY_CHARS],
            ),
            index,
            ledger.provenance_write(turn.thread_id, turn.turn_index, turn.provenance),
            # (a thread still titled "New conversation" is named after this message)
            repo.turn_finished(turn.thread_id, retitle=titles.from_message(turn.content)),
            # The head moves onto the turn only if its thread still is the working one.
            heads_repo.head_advance(
                root_thread_id=turn.root_thread_id,
                working_thread_id=turn.thread_id,
                head_turn_id=turn.node_id,
            ),
            heads_repo.lease_release(
                root_thread_id=turn.root_thread_id, process_id=self.process_id
            ),
        ]
        return [w for w in closing if w is not None]
