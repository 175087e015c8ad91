"""The janitor: reclaims threads that a crash left half-built.

A branch stays `pending` only between the first and last phase of its creation, and a
fork stays `building` likewise; one older than the configured age was abandoned by a
crash. Its rows and its checkpointer thread are removed. Drafts that are no longer any
family's working thread are removed too (a checkout normally drops them itself), and
so are action-log entries older than the replay window. Each run also applies the
retention policy, when one is configured.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import select

from app.agent.runtime import AgentRuntime
from app.config import Settings
from app.db.engine import Database
from app.db.models import ChatHead, Conversation, ConversationBranch
from app.events import log as action_log
from app.services import retention
from app.services.branching import delete_thread_rows
from app.services.conversations import now

log = logging.getLogger("haico.janitor")


@dataclass
class JanitorReport:
    pending_branches: list[str] = field(default_factory=list)
    building_forks: list[str] = field(default_factory=list)
    orphan_drafts: list[str] = field(default_factory=list)
    checkpoint_failures: list[str] = field(default_factory=list)
    log_entries_dropped: int = 0
    pruned_turn_ids: dict[str, list[str]] = field(default_factory=dict)

    @property
    def removed(self) -> list[str]:
        return self.pending_branches + self.building_forks + self.orphan_drafts


async def run_once(
    db: Database,
    runtime: AgentRuntime,
    *,
    max_age_seconds: float,
    settings: Settings | None = None,
) -> JanitorReport:
    """Remove half-built threads older than `max_age_seconds` and orphaned drafts; with
    `settings`, also trim the action log and apply the retention policy."""
    cutoff = now() - timedelta(seconds=max_age_seconds)
    report = JanitorReport()
    async with db.transaction() as s:
        orphans = (
            (
                await s.execute(
                    select(ConversationBranch.thread_id)
                    .outerjoin(ChatHead, ChatHead.working_thread_id == ConversationBranch.thread_id)
                    .where(ConversationBranch.status == "draft", ChatHead.root_thread_id.is_(None))
                )
            )
            .scalars()
            .all()
        )
        for thread_id in orphans:
            await delete_thread_rows(s, thread_id)
        report.orphan_drafts = list(orphans)
        pending = (
            (
                await s.execute(
                    select(ConversationBranch.thread_id).where(
                        ConversationBranch.status == "pending",
                        ConversationBranch.created_at < cutoff,
                    )
                )
            )
            .scalars()
            .all()
        )
        building = (
            (
                await s.execute(
                    select(Conversation.thread_id).where(
                        Conversation.building.is_(True), Conversation.created_at < cutoff
                    )
                )
            )
            .scalars()
            .all()
        )
        for thread_id in [*pending, *building]:
            await delete_thread_rows(s, thread_id)
        report.pending_branches = list(pending)
        report.building_forks = list(building)
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
        retained = await retention.apply(
            db,
            runtime,
            max_age_days=settings.retention_max_age_days,
            max_branches=settings.retention_max_branches,
        )
        report.pruned_turn_ids = retained.pruned_turn_ids
    if report.removed:
        log.info("janitor removed %d thread(s): %s", len(report.removed), report.removed)
    return report


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
        if self._task:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

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
