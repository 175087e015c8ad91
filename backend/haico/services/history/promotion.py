"""Promoting a draft: the restored view a checkout made becomes a real branch when a
message is sent there (phases 2 and 3 of `seeding`, its rows already in place).

On failure it stays a draft with the user's edits, and `SeedingFailed` says so.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.runtime import AgentRuntime
from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.repositories import threads as repo
from haico.domain import BranchStatus
from haico.services.history.seeding import seed_then_activate


async def promote_draft(db: Database, runtime: AgentRuntime, thread_id: str) -> None:
    """Seed a draft's transcript and make it a real branch; on failure it stays a draft."""
    async with db.read() as s:
        branch = await repo.get_branch(s, thread_id)
        if branch is None or branch.status != BranchStatus.DRAFT:
            return
        parent_id, bp = branch.parent_thread_id, branch.branch_point_turn
    await promote_known_draft(
        db,
        runtime,
        thread_id=thread_id,
        parent_thread_id=parent_id,
        branch_point_turn=bp,
        parent_is_draft=None,
    )


async def promote_known_draft(
    db: Database,
    runtime: AgentRuntime,
    *,
    thread_id: str,
    parent_thread_id: str,
    branch_point_turn: int,
    parent_is_draft: bool | None = False,
) -> None:
    """`promote_draft` for a draft whose branch row the caller has just read (its
    parent and branch point): no read of it again. Its activation changes only a row
    still a draft, so a draft that another send promoted meanwhile stays as that left
    it. A draft's parent is never a draft (a draft is restored only from an active
    thread), so by default its prefix is taken from the parent with no lookup
    (`parent_is_draft` None: look it up, as `seed_transcript` does)."""

    async def activate(s: AsyncSession) -> None:
        await fault(s, Step.PROMOTE)
        await repo.set_branch_status(s, thread_id, BranchStatus.ACTIVE, only_if=BranchStatus.DRAFT)

    async def keep_draft() -> None:
        return None

    await seed_then_activate(
        db,
        runtime,
        source_thread_id=parent_thread_id,
        target_thread_id=thread_id,
        turn=branch_point_turn,
        kind="draft",
        activate=activate,
        undo=keep_draft,
        failure=(
            "the restored workspace could not become a branch (its transcript could not be "
            "written); your edits are kept, try sending again"
        ),
        source_is_draft=parent_is_draft,
    )
