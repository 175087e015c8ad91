"""Head moves: the family's durable head, its working thread, and the discard guard.

Each family has one `chat_heads` row: the head (the node at the end of the selected
path, or none for the baseline), the working thread (whose live rows are the
workspace the user sees), and a version. Invariant: the working thread's tip is the
head. Every move of the head goes through `move_head` (checkout, an implicit checkout
before a send, deleting the working thread) or `advance_head` (a turn ends), inside
the caller's transaction and under the head row's lock.

A draft (a branch row with status `draft`) is a hidden restored view: when the head moves
away from one whose edits would be lost, `guard_discard` refuses unless forced. A real
thread is never discarded: its live rows are its own tip."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.dialect import dialect_of
from app.db.engine import fault
from app.db.faults import Step
from app.db.models import (
    ActiveTurn,
    ChatHead,
    Conversation,
    ConversationBranch,
    WorkspaceSnapshot,
)
from app.db.repositories import heads as heads_repo
from app.db.repositories import snapshots as snap_repo
from app.db.repositories import threads as repo
from app.db.repositories.heads import LockNotAvailable
from app.domain import BranchStatus, NodeId, new_thread_id, now
from app.errors import CheckoutWouldDiscardChanges, LeaseHeld, NotFound
from app.events import actions
from app.events import log as action_log
from app.services.access import Role
from app.services.conversations import check_owned, get_owned
from app.services.family import Family, Lineage, first_owned_turn
from app.services.snapshots import (
    RestoreSource,
    copy_as_of_in,
    resolve_restore_state,
    restore_source,
)
from app.services.workspace_state import live_state, rejected_from

T = TypeVar("T")

LEASE_HELD = "another checkout, or a turn that is finishing, holds this conversation's head; retry"


async def ensure_head(s: AsyncSession, root: Conversation) -> None:
    """Create the family's head row if it has none (working = root, head = its tip)."""
    first = first_owned_turn(None, root.forked_from_turn)
    head = NodeId.format(root.thread_id, root.turn_index) if root.turn_index >= first else None
    await heads_repo.insert_head_if_missing(s, root_thread_id=root.thread_id, head_turn_id=head)


async def _locked(
    s: AsyncSession, root_thread_id: str, lock: Callable[[], Awaitable[T | None]]
) -> T:
    """`lock()`'s row (the head row, locked), with the head row created first if missing."""
    for attempt in range(2):
        try:
            found = await lock()
        except LockNotAvailable as exc:
            raise LeaseHeld(LEASE_HELD) from exc
        if found is not None:
            return found
        root = await repo.get_thread(s, root_thread_id)
        if root is None or attempt:
            break
        await ensure_head(s, root)
    raise NotFound("conversation family not found")


async def lock_head(s: AsyncSession, root_thread_id: str, *, nowait: bool) -> ChatHead:
    """The family's head row, locked for this transaction (created first if missing)."""
    return await _locked(
        s, root_thread_id, lambda: heads_repo.lock_head_row(s, root_thread_id, nowait=nowait)
    )


async def lock_owned_with_head(
    s: AsyncSession, *, thread_id: str, user_id: int, need: Role = Role.EDITOR
) -> tuple[Conversation, ConversationBranch | None, ChatHead]:
    """The thread if `user_id` holds `need` on it (`conversations.get_owned`), its branch
    row and its family's head row; both locked, in one read when the head row exists."""
    found = await heads_repo.lock_with_head(s, thread_id)
    if found is None:
        conv, branch = await get_owned(
            s, thread_id=thread_id, user_id=user_id, for_update=True, need=need
        )
        return conv, branch, await lock_head(s, conv.root_thread_id, nowait=False)
    conv, branch, head = found
    await check_owned(s, conv, branch, user_id=user_id, need=need)
    return conv, branch, head


async def lock_owned_head_and_turn(
    s: AsyncSession, *, thread_id: str, user_id: int, need: Role = Role.EDITOR
) -> tuple[Conversation, ConversationBranch | None, ChatHead, ActiveTurn | None]:
    """The thread if `user_id` holds `need` on it (as `conversations.get_owned`) with its branch
    row, its family's head row locked NOWAIT and the family's active turn as of that
    lock: one read when the head row exists (`lock_thread_head_and_turn`), else the
    head row is created, locked, and the active turn read after. A contended lock
    raises `LeaseHeld` before ownership is checked (the transaction is aborted by
    then): the caller checks it in a new one."""
    try:
        found = await heads_repo.lock_thread_head_and_turn(s, thread_id)
    except LockNotAvailable as exc:
        raise LeaseHeld(LEASE_HELD) from exc
    if found is None:
        conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id, need=need)
        head = await lock_head(s, conv.root_thread_id, nowait=True)
        return conv, branch, head, await heads_repo.get_active_turn(s, conv.root_thread_id)
    conv, branch, head, active = found
    await check_owned(s, conv, branch, user_id=user_id, need=need)
    return conv, branch, head, active


async def read_head(s: AsyncSession, root_thread_id: str) -> ChatHead:
    """The family's head row (created if missing), unlocked."""
    head = await heads_repo.get_head(s, root_thread_id)
    if head is None:
        root = await repo.get_thread(s, root_thread_id)
        if root is None:
            raise NotFound("conversation family not found")
        await ensure_head(s, root)
        head = await heads_repo.get_head(s, root_thread_id)
        assert head is not None
    return head


# A thread with its branch row (None for a root), as `repo.get_with_branch` reads it.
Loaded = tuple[Conversation, ConversationBranch | None]


@dataclass
class Target:
    """Where a head move goes: node `turn` of `thread` (turn_id None = the baseline)."""

    thread: Conversation
    turn: int
    turn_id: str | None
    branch: ConversationBranch | None = None
    # The thread's snapshot rows read while validating, by turn (None: it has none).
    snapshots: dict[int, WorkspaceSnapshot | None] = field(default_factory=dict)

    @property
    def loaded(self) -> Loaded:
        return self.thread, self.branch


async def resolve_target(
    s: AsyncSession,
    *,
    root_thread_id: str,
    user_id: int,
    turn_id: str | None,
    known: Loaded | None = None,
) -> Target:
    """Validate that the node belongs to the family, is owned by its thread and retained.

    `known` is a thread the caller has read in this transaction already (not read again
    when it is the node's thread)."""
    if turn_id is None:
        root = await repo.get_thread(s, root_thread_id)
        assert root is not None
        return Target(root, first_owned_turn(None, root.forked_from_turn) - 1, None)
    node = NodeId.parse(turn_id)
    missing = NotFound(f"turn {turn_id} is not a retained turn of this conversation")
    if node is None:
        raise missing
    found = known if known and known[0].thread_id == node.thread_id else None
    found = found or await repo.get_with_branch(s, node.thread_id)
    if found is None:
        raise missing
    conv, branch = found
    # The caller's access to the family was checked before: the family decides.
    if conv.root_thread_id != root_thread_id:
        raise missing
    repo.know_lineage(s, conv, branch)
    if conv.deleted_at is not None or (branch is not None and branch.status != BranchStatus.ACTIVE):
        raise missing
    first = first_owned_turn(branch.branch_point_turn if branch else None, conv.forked_from_turn)
    if not first <= node.turn <= conv.turn_index:
        raise missing
    # A node short of its thread's tip is restored from the next turn's snapshot
    # (`snapshots.restore_source`): it is read in the same query.
    turns = [node.turn] if node.turn == conv.turn_index else [node.turn, node.turn + 1]
    snapshots = await snap_repo.get_snapshots(s, node.thread_id, turns)
    if snapshots[node.turn] is None:
        raise missing
    return Target(conv, node.turn, turn_id, branch, snapshots)


async def branch_point_target(s: AsyncSession, conv: Conversation, *, user_id: int) -> Target:
    """The node a branch hangs from (the baseline for a root or a branch at 0)."""
    family = await Family.load(s, conv.root_thread_id)
    node = family.branch_point_node(conv.thread_id)
    return await resolve_target(
        s,
        root_thread_id=conv.root_thread_id,
        user_id=user_id,
        turn_id=str(node) if node is not None else None,
    )


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


async def create_draft(s: AsyncSession, target: Target) -> str:
    """A hidden branch at the target node whose workspace is copied as of that node."""
    source = target.thread
    restore = await restore_source(s, source, target.turn, known=target.snapshots)
    thread_id = new_thread_id()
    if await insert_draft_in_sql(s, restore, source, thread_id=thread_id, turn=target.turn):
        return thread_id
    draft = Conversation(
        thread_id=thread_id,
        user_id=source.user_id,
        root_thread_id=source.root_thread_id,
        title=source.title,
        turn_index=target.turn,
        message_count=2 * target.turn,
        created_at=now(),
        updated_at=now(),
    )
    # Written together with the copies (one unit of work, flushed before the first copy).
    s.add(draft)
    s.add(
        ConversationBranch(
            thread_id=draft.thread_id,
            parent_thread_id=source.thread_id,
            branch_point_turn=target.turn,
            status=BranchStatus.DRAFT,
            dirty=False,
            created_at=now(),
        )
    )
    await copy_as_of_in(s, restore, draft)
    return draft.thread_id


async def _drop_draft(s: AsyncSession, thread_id: str, previous: Loaded | None) -> None:
    if previous is not None and previous[0].thread_id == thread_id:
        branch = previous[1]
    else:
        branch = await repo.get_branch(s, thread_id)
    if branch is not None and branch.status == BranchStatus.DRAFT:
        await repo.delete_thread_rows(s, thread_id)


async def move_head(
    s: AsyncSession,
    head: ChatHead,
    *,
    head_turn_id: str | None,
    working_thread_id: str,
    owner_id: int,
    path: list[NodeId] | None = None,
    previous: Loaded | None = None,
) -> None:
    """Point the head at a node and the working thread at the thread whose tip it is.

    The previous working thread (`previous`, read when not given) is dropped when it
    was a draft left behind; the move is logged (`chat/turnsLoaded` with the selected
    path when given, then `chat/historyCheckedOut`, naming the caller when it is not
    the family's owner `owner_id`).
    """
    if head.working_thread_id != working_thread_id:
        await _drop_draft(s, head.working_thread_id, previous)
    # The head row is locked by this transaction (every caller took it first), so
    # the update needs no version check; it runs in the log's statement.
    write = heads_repo.head_move(
        head, head_turn_id=head_turn_id, working_thread_id=working_thread_id
    )
    logged = [] if path is None else [actions.turns_loaded([str(n) for n in path])]
    author = action_log.grantee(owner_id)
    logged.append(actions.history_checked_out(head_turn_id, author=author))
    await action_log.append_chat(s, head.root_thread_id, *logged, after=[write])
    heads_repo.moved(head, write)
    await fault(s, Step.HEAD)
    await fault(s, Step.PUBLISH)


async def switch_in(
    s: AsyncSession, head: ChatHead, target: Target, *, force: bool, known: Loaded | None = None
) -> None:
    """Steps 5-9 of a checkout, inside the caller's transaction and lock (`known`: a
    thread read in it already)."""
    loaded = [target.loaded, *([known] if known else [])]
    previous = await guard_discard(
        s, head, force=force, working=await working_thread(s, head, *loaded)
    )
    if target.turn == target.thread.turn_index:
        working = target.thread.thread_id
    else:
        working = await create_draft(s, target)
    await fault(s, Step.RESTORE)
    path = (
        (await Lineage.load(s, target.thread.thread_id)).path_to(target.turn)
        if target.turn_id is not None
        else []
    )
    await move_head(
        s,
        head,
        head_turn_id=target.turn_id,
        working_thread_id=working,
        owner_id=target.thread.user_id,
        path=path,
        previous=previous,
    )


async def make_working_in(
    s: AsyncSession,
    head: ChatHead,
    conv: Conversation,
    branch: ConversationBranch | None,
    *,
    force: bool,
    user_id: int,
) -> None:
    """Make `conv` the working thread before a send (an implicit checkout of its tip)."""
    first = first_owned_turn(branch.branch_point_turn if branch else None, conv.forked_from_turn)
    if conv.turn_index < first:
        # A branch that owns no turn yet is its own tip: the head is its branch point.
        previous = await guard_discard(s, head, force=force)
        family = await Family.load(s, head.root_thread_id)
        node = family.branch_point_node(conv.thread_id)
        await move_head(
            s,
            head,
            head_turn_id=str(node) if node is not None else None,
            working_thread_id=conv.thread_id,
            owner_id=conv.user_id,
            previous=previous,
        )
        return
    tip = NodeId.format(conv.thread_id, conv.turn_index)
    root_id = head.root_thread_id
    try:
        target = await resolve_target(s, root_thread_id=root_id, user_id=user_id, turn_id=tip)
    except NotFound:
        # Linear pruning cut this thread back: its clock is ahead of its last retained
        # node, so continuing goes through a draft at that node (ids are never reused).
        kept = await snap_repo.last_kept_turn(s, conv.thread_id, from_turn=first)
        if kept is not None:
            target = await resolve_target(
                s,
                root_thread_id=root_id,
                user_id=user_id,
                turn_id=NodeId.format(conv.thread_id, kept),
            )
        else:
            target = await branch_point_target(s, conv, user_id=user_id)
    await switch_in(s, head, target, force=force)


async def advance_head(
    s: AsyncSession, *, root_thread_id: str, thread_id: str, turn_id: str
) -> None:
    """Advance the head onto a finished turn of the working thread (any end state)."""
    await heads_repo.advance_head_if_working(
        s, root_thread_id=root_thread_id, working_thread_id=thread_id, head_turn_id=turn_id
    )
