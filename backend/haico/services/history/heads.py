"""Head moves: the family's durable head, its working thread, and the discard guard.

Each family has one `chat_heads` row: the head (the node at the end of the selected
path, or none for the baseline), the working thread (whose live rows are the
workspace the user sees), and a version. Invariant: the working thread's tip is the
head. Every move of the head goes through `move_head` (checkout, an implicit checkout
before a send, deleting the working thread) or `advance_head` (a turn ends), inside
the caller's transaction and under the head row's lock.

A move onto a node short of its thread's tip makes a draft there, and a move away from
a draft drops it (`drafts`: the hidden restored view and its discard guard)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import fault
from haico.db.faults import Step
from haico.db.models import (
    ActiveTurn,
    ChatHead,
    Conversation,
    ConversationBranch,
    WorkspaceSnapshot,
)
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as repo
from haico.db.repositories.heads import LockNotAvailable
from haico.domain import BranchStatus, NodeId
from haico.errors import LeaseHeld, NotFound
from haico.events import actions
from haico.events import log as action_log
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import check_for, get_for
from haico.services.families.model import Family, Lineage, first_owned_turn
from haico.services.history import drafts
from haico.services.history.drafts import Loaded

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


async def lock_for(
    s: AsyncSession, principal: Principal, *, thread_id: str, need: Role = Role.EDITOR
) -> tuple[Conversation, ConversationBranch | None, ChatHead]:
    """The thread if `principal` holds `need` on it (`conversations.get_for`), its branch
    row and its family's head row; both locked, in one read when the head row exists."""
    found = await heads_repo.lock_with_head(s, thread_id)
    if found is None:
        conv, branch = await get_for(s, principal, thread_id=thread_id, for_update=True, need=need)
        return conv, branch, await lock_head(s, conv.root_thread_id, nowait=False)
    conv, branch, head = found
    await check_for(s, principal, conv, branch, need=need)
    return conv, branch, head


async def lock_for_with_turn(
    s: AsyncSession, principal: Principal, *, thread_id: str, need: Role = Role.EDITOR
) -> tuple[Conversation, ConversationBranch | None, ChatHead, ActiveTurn | None]:
    """The thread if `principal` holds `need` on it (as `conversations.get_for`) with its branch
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
        conv, branch = await get_for(s, principal, thread_id=thread_id, need=need)
        head = await lock_head(s, conv.root_thread_id, nowait=True)
        return conv, branch, head, await heads_repo.get_active_turn(s, conv.root_thread_id)
    conv, branch, head, active = found
    await check_for(s, principal, conv, branch, need=need)
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
    principal: Principal,
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


async def branch_point_target(
    s: AsyncSession, conv: Conversation, *, principal: Principal
) -> Target:
    """The node a branch hangs from (the baseline for a root or a branch at 0)."""
    family = await Family.load(s, conv.root_thread_id)
    node = family.branch_point_node(conv.thread_id)
    return await resolve_target(
        s,
        root_thread_id=conv.root_thread_id,
        principal=principal,
        turn_id=str(node) if node is not None else None,
    )


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
        await drafts.drop_draft(s, head.working_thread_id, previous)
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
    previous = await drafts.guard_discard(
        s, head, force=force, working=await drafts.working_thread(s, head, *loaded)
    )
    if target.turn == target.thread.turn_index:
        working = target.thread.thread_id
    else:
        working = await drafts.create_draft(s, target.thread, target.turn, known=target.snapshots)
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
    principal: Principal,
) -> None:
    """Make `conv` the working thread before a send (an implicit checkout of its tip)."""
    first = first_owned_turn(branch.branch_point_turn if branch else None, conv.forked_from_turn)
    if conv.turn_index < first:
        # A branch that owns no turn yet is its own tip: the head is its branch point.
        previous = await drafts.guard_discard(s, head, force=force)
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
        target = await resolve_target(s, root_thread_id=root_id, principal=principal, turn_id=tip)
    except NotFound:
        # Linear pruning cut this thread back: its clock is ahead of its last retained
        # node, so continuing goes through a draft at that node (ids are never reused).
        kept = await snap_repo.last_kept_turn(s, conv.thread_id, from_turn=first)
        if kept is not None:
            target = await resolve_target(
                s,
                root_thread_id=root_id,
                principal=principal,
                turn_id=NodeId.format(conv.thread_id, kept),
            )
        else:
            target = await branch_point_target(s, conv, principal=principal)
    await switch_in(s, head, target, force=force)


async def advance_head(
    s: AsyncSession, *, root_thread_id: str, thread_id: str, turn_id: str
) -> None:
    """Advance the head onto a finished turn of the working thread (any end state)."""
    await heads_repo.advance_head_if_working(
        s, root_thread_id=root_thread_id, working_thread_id=thread_id, head_turn_id=turn_id
    )
