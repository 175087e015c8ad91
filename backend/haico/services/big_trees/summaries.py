"""Branch summaries, written off the turn's path.

A closed turn only *touches* its thread (`Summarizer.touch`, no await): a background
task waits `summary_debounce_seconds` (more growth meanwhile is folded into the same
run) and, while the family runs another turn, until it ends; then it reads the
branch's user messages and its net workspace change and writes the summary with the
thread's turn clock. The offline provider derives it
deterministically on every growth; a real provider's summary model is called at most
once per branch per `summary_every_turns` turns, failed attempts included. A failure
(the model, the read or the write) keeps the summary already stored; the next growth
tries again. The write is one conditional UPDATE with its catalogue action, so an
older summary never overwrites a newer one.

What is pending lives in this process only, but it can be re-derived: a thread whose
`summary_turn` is behind its turn clock has a summary due. A process that died with
summaries pending (or between a turn's close and its touch) leaves exactly such rows,
so on start (`resume`, after the stale-turn sweep has closed the dead process's turns)
every thread changed in the last RESUME_WINDOW whose summary is behind is touched
again, at most RESUME_LIMIT of them, most recent first. The model budget still holds:
a branch whose stored summary is fewer than `summary_every_turns` turns old is left
for its next growth, as before the crash.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from datetime import timedelta

from langchain_core.language_models import BaseChatModel

from haico.agent.summaries import make_summary_model, model_summary, offline_summary
from haico.config import Settings
from haico.db.engine import Database
from haico.db.repositories import graph as graph_repo
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import summaries as summaries_repo
from haico.db.repositories import threads as repo
from haico.domain import now
from haico.events import log as action_log
from haico.process import background
from haico.services.compare.net_change import NetChange
from haico.services.families.model import first_owned_turn
from haico.services.workspace.snapshots import MAX_USER_MESSAGE_PREVIEW, resolve_restore_state
from haico.services.workspace.state import live_state

log = logging.getLogger("haico.summaries")

BUSY_RETRY_SECONDS = 0.5
RESUME_WINDOW = timedelta(days=2)
RESUME_LIMIT = 500


@dataclass(frozen=True)
class BranchInputs:
    root_thread_id: str
    turn_index: int
    messages: list[str]
    changes: list[str]


async def branch_inputs(db: Database, thread_id: str) -> BranchInputs | None:
    """What a summary is made of; None when the thread is gone or owns no turn yet."""
    async with db.read() as s:
        found = await repo.get_with_branch(s, thread_id)
        if found is None:
            return None
        conv, branch = found
        first = first_owned_turn(
            branch.branch_point_turn if branch else None, conv.forked_from_turn
        )
        if conv.deleted_at is not None or conv.turn_index < first:
            return None
        rows = await graph_repo.nodes_in_ranges(
            s,
            ranges={thread_id: (first, conv.turn_index)},
            skip=set(),
            preview_chars=MAX_USER_MESSAGE_PREVIEW,
        )
        start = await resolve_restore_state(s, conv, first - 1)
        end = await live_state(s, conv)
        return BranchInputs(
            root_thread_id=conv.root_thread_id,
            turn_index=conv.turn_index,
            messages=[r.user_message for r in sorted(rows, key=lambda r: r.turn_index)],
            changes=NetChange.between(start, end).parts(),
        )


class Summarizer:
    """This process's summary writer: one debounced background run per branch."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db
        self.model: BaseChatModel | None = make_summary_model(settings)
        self._dirty: set[str] = set()
        self._tasks: dict[str, asyncio.Task[None]] = {}
        # thread -> turn clock of the last model call (kept on failure too: the budget)
        self._called_at: dict[str, int] = {}
        self._model_calls = asyncio.Semaphore(2)

    def touch(self, thread_id: str) -> None:
        """The branch grew: refresh its summary soon, in the background."""
        self._dirty.add(thread_id)
        task = self._tasks.get(thread_id)
        if task is None or task.done():
            self._tasks[thread_id] = asyncio.create_task(
                self._run(thread_id), name=f"summary {thread_id}"
            )

    async def resume(self) -> int:
        """Touch the threads whose summary is behind (see the module doc); how many. A
        failed read is logged and resumes nothing (the next growth still refreshes)."""
        try:
            async with self.db.read() as s:
                due = await summaries_repo.behind(
                    s, since=now() - RESUME_WINDOW, limit=RESUME_LIMIT
                )
        except Exception:
            log.exception("could not resume pending summaries")
            return 0
        for thread_id in due:
            self.touch(thread_id)
        return len(due)

    async def idle(self) -> None:
        """Wait until no summary is pending (tests and shutdown)."""
        while self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)

    async def close(self) -> None:
        await background.cancel_all(list(self._tasks.values()))
        self._tasks.clear()

    async def _family_busy(self, thread_id: str) -> bool:
        async with self.db.read() as s:
            conv = await repo.get_thread(s, thread_id)
            if conv is None:
                return False
            return await heads_repo.get_active_turn(s, conv.root_thread_id) is not None

    async def _run(self, thread_id: str) -> None:
        try:
            while thread_id in self._dirty:
                await asyncio.sleep(self.settings.summary_debounce_seconds)
                try:
                    busy = await self._family_busy(thread_id)
                except Exception:
                    busy = False
                if busy:
                    # Not while the family streams a reply: a summary landing then would
                    # redraw its lane mid-stream. It is written once the turn is over.
                    await asyncio.sleep(BUSY_RETRY_SECONDS)
                    continue
                self._dirty.discard(thread_id)
                try:
                    await self.refresh(thread_id)
                except Exception:
                    log.exception("could not summarise %s; its old summary stays", thread_id)
        finally:
            if self._tasks.get(thread_id) is asyncio.current_task():
                del self._tasks[thread_id]

    async def refresh(self, thread_id: str) -> str | None:
        """Write the branch's summary if it is due; the new summary, or None."""
        async with self.db.read() as s:
            conv = await repo.get_thread(s, thread_id)
            if conv is None:
                return None
            done_at, has_summary = conv.summary_turn, conv.summary is not None
        inputs = await branch_inputs(self.db, thread_id)
        if inputs is None or (has_summary and done_at == inputs.turn_index):
            return None
        if self.model is None:
            text = offline_summary(inputs.messages, inputs.changes)
        else:
            called = self._called_at.get(thread_id, done_at if has_summary else None)
            if (
                called is not None
                and inputs.turn_index - called < self.settings.summary_every_turns
            ):
                return None
            self._called_at[thread_id] = inputs.turn_index
            async with self._model_calls:
                text = await model_summary(self.model, inputs.messages, inputs.changes)
        async with self.db.transaction() as s:
            if not await repo.write_summary(s, thread_id, text, turn=inputs.turn_index):
                return None
            await action_log.append_catalogue(
                s, inputs.root_thread_id, thread_id, "summarized", summary=text
            )
        return text
