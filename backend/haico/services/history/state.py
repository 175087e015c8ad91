"""The history state of a family as clients see it: read it, check out, delete a thread.

Checkout runs in one transaction under the family lock (the head row, locked NOWAIT
on Postgres so a contended lease answers `Conflict` at once; SQLite transactions
hold the write lock from BEGIN). In order, under that lock: validate the target node
(retention takes the same lock, so the node cannot be pruned between the check and
the move), compare the expected head, refuse during an active turn, detect whether
an edited draft would be lost and refuse unless forced, restore (switch to the thread
whose tip is the node, or create a hidden draft copied as of the node), move the
head, publish. Any failure rolls the whole transaction back: the previous head and
workspace are untouched.
The moves themselves live in `services.history.heads`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.models import ActiveTurn, ChatHead
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import threads as repo
from haico.domain import BranchStatus, NodeId, now
from haico.errors import Conflict, LeaseHeld, NotFound, TurnInProgress
from haico.events import log as action_log
from haico.schemas.history import ActiveTurnOut, HistoryOut
from haico.services.access.principal import Feature, Principal, require
from haico.services.access.rule import Role
from haico.services.families.conversations import get_for
from haico.services.history import heads

UNSET: Any = object()


def history_view(head: ChatHead, active: ActiveTurn | None, *, retains: bool) -> HistoryOut:
    return HistoryOut(
        root_thread_id=head.root_thread_id,
        head_turn_id=head.head_turn_id,
        working_thread_id=head.working_thread_id,
        retains_branches=retains,
        active_turn=(
            ActiveTurnOut(
                turn_id=NodeId.format(active.thread_id, active.turn_index),
                parent_turn_id=active.parent_turn_id,
            )
            if active
            else None
        ),
        version=head.version,
    )


async def read_history_in(s: AsyncSession, root_thread_id: str, *, retains: bool) -> HistoryOut:
    """The family's history state: its head and its active turn read in one statement,
    so a turn closing meanwhile is seen either running or done with the head on its
    node (`heads_repo.head_and_active_turn`)."""
    found = await heads_repo.head_and_active_turn(s, root_thread_id)
    if found is None:
        await heads.read_head(s, root_thread_id)  # creates the missing head row
        found = await heads_repo.head_and_active_turn(s, root_thread_id)
        assert found is not None
    head, active = found
    return history_view(head, active, retains=retains)


async def get_history(
    db: Database, *, principal: Principal, thread_id: str, retains: bool
) -> HistoryOut:
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        return await read_history_in(s, conv.root_thread_id, retains=retains)


async def checkout(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    turn_id: str | None,
    expected_head_turn_id: Any = UNSET,
    force: bool = False,
    retains: bool,
) -> HistoryOut:
    """Move the family's head to `turn_id` (None = the baseline); see the module doc."""
    async with db.transaction() as s:
        try:
            conv, branch, head, active = await heads.lock_for_with_turn(
                s, principal, thread_id=thread_id, need=Role.EDITOR
            )
        except LeaseHeld:
            # The lock was asked for before ownership was checked (and this transaction
            # is aborted): a stranger learns nothing from the conflict.
            async with db.read() as r:
                await get_for(r, principal, thread_id=thread_id, need=Role.EDITOR)
            raise
        root_id = conv.root_thread_id
        # The target is validated under the family lock: retention takes the same lock,
        # so it cannot prune the node between the check and the move.
        target = await heads.resolve_target(
            s, root_thread_id=root_id, principal=principal, turn_id=turn_id, known=(conv, branch)
        )
        if target.turn_id != head.head_turn_id:
            # A linear condition keeps a participant on its head.
            require(principal, Feature.BRANCHING)
        await fault(s, Step.VALIDATE)
        if expected_head_turn_id is not UNSET and expected_head_turn_id != head.head_turn_id:
            raise Conflict(
                f"the head moved: it is {head.head_turn_id or 'the baseline'}, "
                f"not {expected_head_turn_id or 'the baseline'}"
            )
        if active is not None:
            raise TurnInProgress("a turn is running in this conversation; wait or cancel it")
        await fault(s, Step.LEASE)
        # Checking out the head itself restores it like any other node: an edited
        # draft there is protected by the discard guard, and `force` gives the node's
        # workspace back.
        await heads.switch_in(s, head, target, force=force, known=(conv, branch))
        return history_view(head, None, retains=retains)


async def soft_delete(db: Database, *, principal: Principal, thread_id: str) -> None:
    """Soft-delete a thread; deleting a family's root deletes the whole family.

    Deleting the family's working thread first moves the head to its branch point (a
    forced checkout in the same transaction), so the family keeps a usable tip.
    """
    async with db.transaction() as s:
        conv, branch = await get_for(s, principal, thread_id=thread_id, need=Role.OWNER)
        root_id = conv.root_thread_id
        # The active turn is read under the family lock: a turn opened just before
        # the lock was taken is seen.
        head = await heads.lock_head(s, root_id, nowait=False)
        if await heads_repo.get_active_turn(s, root_id) is not None:
            raise TurnInProgress("a turn is running in this conversation; wait or cancel it")
        stamp = now()
        if conv.root_thread_id == conv.thread_id:
            await repo.soft_delete_family(s, root_id, stamp)
        else:
            if head.working_thread_id == conv.thread_id:
                try:
                    target = await heads.branch_point_target(s, conv, principal=principal)
                except NotFound:
                    # The branch point is no longer retained: fall back to the baseline.
                    target = await heads.resolve_target(
                        s, root_thread_id=root_id, principal=principal, turn_id=None
                    )
                await heads.switch_in(s, head, target, force=True)
            if branch is not None and branch.status == BranchStatus.DRAFT:
                # A draft has nothing worth keeping once it is not the working thread.
                await repo.delete_thread_rows(s, conv.thread_id)
            else:
                conv.deleted_at = stamp
        await action_log.append_catalogue(s, root_id, conv.thread_id, "deleted")
