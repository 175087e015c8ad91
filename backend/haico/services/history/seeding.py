"""Seeding a new thread's transcript: phases 2 and 3 of every branch, fork and promoted
draft (`branching` describes phase 1 and the whole story).

Phase 2 writes the source's transcript prefix into the new checkpointer thread with one
state update, holding no SQL session; phase 3 activates the thread in one transaction.
If either fails, the partial transcript is removed, the caller's undo runs, and
`SeedingFailed` (502) is raised. A draft has no transcript of its own: it reads, and is
seeded from, its parent's prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import BaseMessage
from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.runtime import AgentRuntime
from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.repositories import threads as repo
from haico.domain import BranchStatus
from haico.errors import SeedingFailed

# The logger of branching as a whole (docs/operations.md names it).
log = logging.getLogger("haico.branching")


def transcript_prefix(messages: list[BaseMessage], turn: int) -> list[BaseMessage]:
    """The transcript through turn `turn`, cut by turn index (see `prefix_through`)."""
    return list(AgentRuntime.prefix_through(messages, turn))


async def _forget_transcript(runtime: AgentRuntime, thread_id: str) -> None:
    try:
        await runtime.delete_thread(thread_id)
    except Exception:
        log.exception("could not delete the checkpoints of %s", thread_id)


async def seed_transcript(
    db: Database,
    runtime: AgentRuntime,
    *,
    source_thread_id: str,
    target_thread_id: str,
    turn: int,
    kind: str,
    source_is_draft: bool | None = None,
) -> None:
    """Write the source's transcript through `turn` as the new thread's first record.

    A draft has no transcript of its own: it inherits its parent's prefix
    (`source_is_draft` False: the caller knows it is not one, nothing to look up).
    """
    inherited = None
    if source_is_draft is not False:
        async with db.read() as s:
            inherited = await draft_transcript(runtime, s, source_thread_id)
    messages = inherited if inherited is not None else await runtime.raw_messages(source_thread_id)
    await runtime.seed(
        thread_id=target_thread_id,
        messages=transcript_prefix(messages, turn),
        metadata={"source": kind, "source_thread_id": source_thread_id, "from_turn": turn},
    )


Activate = Callable[[AsyncSession], Awaitable[None]]


async def seed_then_activate(
    db: Database,
    runtime: AgentRuntime,
    *,
    source_thread_id: str,
    target_thread_id: str,
    turn: int,
    kind: str,
    activate: Activate,
    undo: Callable[[], Awaitable[None]],
    failure: str,
    source_is_draft: bool | None = None,
) -> None:
    """Phases 2 and 3 of every new thread (branch, fork, promoted draft), with compensation.

    Seeds the transcript prefix, then runs `activate` in one transaction. If either
    fails, the partial transcript is removed, `undo` runs, and `SeedingFailed` (502)
    carries `failure` as its message.
    """
    try:
        await db.faults(Step.SEED)
        await seed_transcript(
            db,
            runtime,
            source_thread_id=source_thread_id,
            target_thread_id=target_thread_id,
            turn=turn,
            kind=kind,
            source_is_draft=source_is_draft,
        )
        async with db.transaction() as s:
            await activate(s)
            await fault(s, Step.ACTIVATE)
    except Exception as exc:
        log.exception("making %s %s failed; compensating", kind, target_thread_id)
        await _forget_transcript(runtime, target_thread_id)
        await undo()
        raise SeedingFailed(failure) from exc


async def draft_transcript(
    runtime: AgentRuntime, s: AsyncSession, thread_id: str
) -> list[Any] | None:
    """A draft has no transcript of its own yet: it shows its parent's prefix."""
    branch = await repo.get_branch(s, thread_id)
    if branch is None or branch.status != BranchStatus.DRAFT:
        return None
    return list(
        transcript_prefix(
            await runtime.raw_messages(branch.parent_thread_id), branch.branch_point_turn
        )
    )
