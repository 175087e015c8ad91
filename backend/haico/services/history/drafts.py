"""Drafts: the hidden restored view a checkout makes at a node short of its thread's tip.

A draft is a branch row with status `draft` whose live rows are the workspace as of
the node. The user may edit it before sending; when the head moves away from a draft
whose edits would be lost, `guard_discard` refuses unless forced, and the draft left
behind is dropped. A real thread is never discarded: its live rows are its own tip.
Everything here runs inside the caller's transaction, under the head row's lock
(`heads`)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import dialect_of
from haico.db.engine import fault
from haico.db.faults import Step
from haico.db.models import ChatHead, Conversation, ConversationBranch, WorkspaceSnapshot
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as repo
from haico.domain import BranchStatus, new_thread_id, now
from haico.errors import CheckoutWouldDiscardChanges
from haico.services.workspace.snapshots import (
    RestoreSource,
    copy_as_of_in,
    resolve_restore_state,
    restore_source,
)
from haico.services.workspace.state import live_state, rejected_from

# A thread with its branch row (None: a root).
Loaded = tuple[Conversation, ConversationBranch | None]


async def working_thread(s: AsyncSession, head: ChatHead, *known: Loaded) -> Loaded | None:
    """The family's working thread with its branch row: one of `known` (threads read in
    this transaction already) when it is one of them and not a draft, else read now.

    A draft is always read again: its `dirty` flag must be read under the head lock,
    so that an edit committed before the lock is never discarded unnoticed."""
    for conv, branch in known:
        if conv.thread_id == head.working_thread_id and (
            branch is None or branch.status != BranchStatus.DRAFT
        ):
            return conv, branch
    return await repo.get_with_branch(s, head.working_thread_id)


async def draft_changes(s: AsyncSession, working: Loaded | None) -> list[str]:
    """What the working draft's edits changed since it was restored ([] = nothing to lose)."""
    if working is None:
        return []
    draft, branch = working
    if branch is None or branch.status != BranchStatus.DRAFT or not branch.dirty:
        return []
    parent = await repo.get_thread(s, branch.parent_thread_id)
    if parent is None:
        return []
    before = await resolve_restore_state(s, parent, branch.branch_point_turn)
    # Edits that were all undone leave nothing to lose: the draft is clean again.
    return before.differences(await live_state(s, draft))


async def guard_discard(
    s: AsyncSession, head: ChatHead, *, force: bool, working: Loaded | None = None
) -> Loaded | None:
    """Refuse to move away from an edited draft unless `force` (the discard guard).

    Returns the working thread (`working`, or read when not given)."""
    working = working or await working_thread(s, head)
    changes = await draft_changes(s, working)
    await fault(s, Step.DETECT)
    if changes and not force:
        branch = working[1] if working else None
        step = branch.branch_point_turn if branch else 0
        message = (
            f"Your edits to the workspace restored at step {step} ({', '.join(changes)}) have "
            "not been sent and would be discarded. Check out anyway to discard them, or send "
            "a message there first to keep them on a new branch."
        )
        raise CheckoutWouldDiscardChanges(message, data={"message": message})
    return working


async def insert_draft_in_sql(
    s: AsyncSession, source: RestoreSource, parent: Conversation, *, thread_id: str, turn: int
) -> bool:
    """On PostgreSQL, for a restore out of a current snapshot: write the draft `thread_id`
    at `turn` of `parent` (its thread and branch rows) with the workspace after
    `source.turn` in one statement (`snapshots` repository, `DRAFT_FROM_SNAPSHOT_SQL`).
    False, having written nothing, where the caller must take the general path (SQLite,
    a restore from live rows, an older snapshot format)."""
    snap = source.snapshot
    if not dialect_of(s).is_postgres or snap is None or snap.format < 2:
        return False
    await snap_repo.load_items(s, snap, frozenset({"rejected"}))
    rejected = [rejected_from(r) for r in snap.rejected or []]
    await s.flush()
    await snap_repo.insert_draft_from_snapshot(
        s,
        snap,
        thread_id=thread_id,
        user_id=parent.user_id,
        root_thread_id=parent.root_thread_id,
        title=parent.title,
        objective=source.objective,
        parent_thread_id=parent.thread_id,
        turn=turn,
        rejected=[r.to_json() for r in rejected if r.rejected_after_turn <= source.turn],
        stamp=now(),
    )
    return True


async def create_draft(
    s: AsyncSession,
    source: Conversation,
    turn: int,
    *,
    known: dict[int, WorkspaceSnapshot | None],
) -> str:
    """A hidden branch at node `turn` of `source` whose workspace is copied as of that
    node (`known`: the thread's snapshot rows read already, by turn)."""
    restore = await restore_source(s, source, turn, known=known)
    thread_id = new_thread_id()
    if await insert_draft_in_sql(s, restore, source, thread_id=thread_id, turn=turn):
        return thread_id
    draft = Conversation(
        thread_id=thread_id,
        user_id=source.user_id,
        root_thread_id=source.root_thread_id,
        title=source.title,
        turn_index=turn,
        message_count=2 * turn,
        created_at=now(),
        updated_at=now(),
    )
    # Written together with the copies (one unit of work, flushed before the first copy).
    s.add(draft)
    s.add(
        ConversationBranch(
            thread_id=draft.thread_id,
            parent_thread_id=source.thread_id,
            branch_point_turn=turn,
            status=BranchStatus.DRAFT,
            dirty=False,
            created_at=now(),
        )
    )
    await copy_as_of_in(s, restore, draft)
    return draft.thread_id


async def drop_draft(s: AsyncSession, thread_id: str, previous: Loaded | None) -> None:
    """Delete the thread's rows when it is a draft (a real thread is never dropped)."""
    if previous is not None and previous[0].thread_id == thread_id:
        branch = previous[1]
    else:
        branch = await repo.get_branch(s, thread_id)
    if branch is not None and branch.status == BranchStatus.DRAFT:
        await repo.delete_thread_rows(s, thread_id)
