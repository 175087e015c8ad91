"""The janitor: reclaims threads that a crash left half-built, and orphan transcripts.

A branch stays `pending` only between the first and last phase of its creation, and a
fork stays `building` likewise; one older than the configured age was abandoned by a
crash. Its rows and its checkpointer thread are removed. Drafts that are no longer any
family's working thread are removed too (a checkout normally drops them itself), and
so are action-log entries older than the replay window. Each run also applies the
retention policy, when one is configured.

Last, it removes orphan checkpoints: transcripts of threads that have no
`conversations` row, left when a deletion removed the rows and then could not reach
the checkpointer (a crash or an error between the two). Every path that writes a
thread's checkpoints (a turn, a branch's or fork's seed phase, draft promotion, a
pruned thread's cut-back transcript, a family import) commits the thread's row
first, so a thread being created is never an orphan, provided the two sets are read
in this order: first the thread ids the checkpointer holds, then the thread ids with
a row (soft-deleted threads, drafts, pending branches and building forks all keep
their row). A thread whose checkpoints the first read saw had its row committed
before that read, so the second read sees the row unless a deletion removed it
meanwhile, and then the thread is an orphan. A thread created after the first read
is not in it. Each orphan's row is looked up once more just before its checkpoints
go: clients may choose a new thread's id (AHP `createSession`, `createChat`), and a
row that came after the second read keeps its checkpoints. A thread whose
checkpoints could not be deleted earlier in the same run is left to the next run.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import timedelta

from haico.agent import checkpoint_threads
from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.db.repositories import consistency as consistency_repo
from haico.db.repositories import threads as repo
from haico.domain import now
from haico.events import log as action_log
from haico.process import background
from haico.services.big_trees.pruning import apply_retention

log = logging.getLogger("haico.janitor")


@dataclass
class JanitorReport:
    pending_branches: list[str] = field(default_factory=list)
    building_forks: list[str] = field(default_factory=list)
    orphan_drafts: list[str] = field(default_factory=list)
    # Threads with checkpoints and no row: only their checkpoints were deleted.
    orphan_checkpoints: list[str] = field(default_factory=list)
    checkpoint_failures: list[str] = field(default_factory=list)
    log_entries_dropped: int = 0
    pruned_turn_ids: dict[str, list[str]] = field(default_factory=dict)

    @property
    def removed(self) -> list[str]:
        """The threads whose rows this run deleted (orphan checkpoints had none)."""
        return self.pending_branches + self.building_forks + self.orphan_drafts


async def run_once(
    db: Database,
    runtime: AgentRuntime,
    *,
    max_age_seconds: float,
    settings: Settings | None = None,
) -> JanitorReport:
    """Remove half-built threads older than `max_age_seconds`, orphaned drafts and
    orphan checkpoints; with `settings`, also trim the action log and apply the
    retention policy."""
    cutoff = now() - timedelta(seconds=max_age_seconds)
    report = JanitorReport()
    async with db.transaction() as s:
        orphans = await consistency_repo.orphan_drafts(s)
        pending, building = await consistency_repo.half_built_before(s, cutoff)
        for thread_id in [*orphans, *pending, *building]:
            await repo.delete_thread_rows(s, thread_id)
        report.orphan_drafts = list(orphans)
        report.pending_branches = pending
        report.building_forks = building
    for thread_id in report.removed:
        try:
            await runtime.delete_thread(thread_id)
        except Exception:
            log.exception("could not delete the checkpoints of %s", thread_id)
            report.checkpoint_failures.append(thread_id)
    if settings is not None:
        async with db.transaction() as s:
            window = timedelta(days=settings.event_log_window_days)
            report.log_entries_dropped = await action_log.prune_before(s, now() - window)
        retained = await apply_retention(
            db,
            runtime,
            max_age_days=settings.retention_max_age_days,
            max_branches=settings.retention_max_branches,
        )
        report.pruned_turn_ids = retained.pruned_turn_ids
    await _remove_orphan_checkpoints(db, runtime, report)
    if report.removed:
        log.info("janitor removed %d thread(s): %s", len(report.removed), report.removed)
    if report.orphan_checkpoints:
        log.info(
            "janitor removed the checkpoints of %d thread(s) with no row: %s",
            len(report.orphan_checkpoints),
            report.orphan_checkpoints,
        )
    return report


async def _remove_orphan_checkpoints(
    db: Database, runtime: AgentRuntime, report: JanitorReport
) -> None:
    """Delete the checkpoints of threads with no row (the order of the reads is what
    keeps a thread being created safe: see the module doc)."""
    if runtime.store is None:
        raise RuntimeError("AgentRuntime.start() has not been called")
    with_checkpoints = await checkpoint_threads.thread_ids(runtime.store)
    async with db.read() as s:
        with_rows = await consistency_repo.thread_ids(s)
    failed = set(report.checkpoint_failures)
    for thread_id in sorted(with_checkpoints - with_rows - failed):
        async with db.read() as s:
            if await repo.get_thread(s, thread_id) is not None:
                continue
        try:
            await runtime.delete_thread(thread_id)
        except Exception:
            log.exception("could not delete the checkpoints of %s", thread_id)
            report.checkpoint_failures.append(thread_id)
            continue
        report.orphan_checkpoints.append(thread_id)


class Janitor:
    """Runs `run_once` every `janitor_interval_seconds` in the background."""

    def __init__(self, settings: Settings, db: Database, runtime: AgentRuntime) -> None:
        self.settings = settings
        self.db = db
        self.runtime = runtime
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._loop())

    async def close(self) -> None:
        await background.stop(self._task)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.janitor_interval_seconds)
            try:
                await run_once(
                    self.db,
                    self.runtime,
                    max_age_seconds=self.settings.pending_max_age_seconds,
                    settings=self.settings,
                )
            except Exception:
                log.exception("janitor run failed")
