"""The history state of a family: its head node, its working thread, and checkout.

Each family has one durable `chat_heads` row: the head (the node at the end of the
selected path, or none for the baseline), the working thread (whose live rows are the
workspace the user sees), and a version. Invariant: the working thread's tip is the
head.

Checkout runs in one transaction under the family lock (the head row, locked NOWAIT
on Postgres so a contended lease answers `Conflict` at once; SQLite transactions
hold the write lock from BEGIN). In order: validate the target node, compare the
expected head, refuse during an active turn, detect whether an edited draft would be
lost and refuse unless forced, restore (switch to the thread whose tip is the node,
or create a hidden draft copied as of the node), move the head, publish. Any failure
rolls the whole transaction back: the previous head and workspace are untouched.

A draft is a branch row with status `draft`. Sending on it promotes it (transcript
seeded, status `active`). On a linear host every node that is no longer on the
selected path is then pruned, except nodes a fork references and their ancestors.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, func, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.runtime import AgentRuntime
from app.db.engine import Database
from app.db.models import (
    ActiveTurn,
    Artifact,
    ChatHead,
    Conversation,
    ConversationBranch,
    WorkspaceSnapshot,
)
from app.db.repositories import conversations as conv_repo
from app.errors import (
    CheckoutWouldDiscardChanges,
    Conflict,
    NotFound,
    SeedingFailed,
    TurnInProgress,
)
from app.events import log as action_log
from app.schemas import ActiveTurnOut, HistoryOut
from app.services.branching import (
    delete_thread_rows,
    seed_transcript,
    transcript_prefix,
)
from app.services.conversations import get_owned, new_thread_id, now
from app.services.family import Family, Node, fork_references, node_key, parse_node
from app.services.workspace import (
    copy_as_of_in,
    live_state,
    replace_workspace_in,
    resolve_restore_state,
    restore_source,
)

log = logging.getLogger("haico.history")

UNSET: Any = object()

# Tests replace this to inject a failure after a named checkout step.
FaultHook = Callable[[str], Awaitable[None]]


async def _no_fault(_: str) -> None:
    return None


fault_hook: FaultHook = _no_fault


def _dialect(s: AsyncSession) -> str:
    return s.bind.dialect.name if s.bind is not None else "sqlite"


async def ensure_head(s: AsyncSession, root: Conversation) -> None:
    """Create the family's head row if it has none (working = root, head = its tip)."""
    insert = pg_insert if _dialect(s) == "postgresql" else sqlite_insert
    first = (root.forked_from_turn or 0) + 1
    head = f"{root.thread_id}:{root.turn_index}" if root.turn_index >= first else None
    await s.execute(
        insert(ChatHead)
        .values(
            root_thread_id=root.thread_id,
            head_turn_id=head,
            working_thread_id=root.thread_id,
            version=0,
            updated_at=now(),
        )
        .on_conflict_do_nothing(index_elements=["root_thread_id"])
    )


async def lock_head(s: AsyncSession, root_thread_id: str, *, nowait: bool) -> ChatHead:
    """The family's head row, locked for this transaction (created first if missing)."""
    stmt = (
        select(ChatHead)
        .where(ChatHead.root_thread_id == root_thread_id)
        .with_for_update(nowait=nowait)
        .execution_options(populate_existing=True)
    )
    for attempt in range(2):
        try:
            head = (await s.execute(stmt)).scalar_one_or_none()
        except DBAPIError as exc:
            if "lock" in str(exc).lower():
                raise Conflict("another checkout holds this conversation's lease; retry") from exc
            raise
        if head is not None or attempt:
            break
        root = await s.get(Conversation, root_thread_id)
        if root is None:
            raise NotFound("conversation family not found")
        await ensure_head(s, root)
    if head is None:
        raise NotFound("conversation family not found")
    return head


async def read_head(s: AsyncSession, root_thread_id: str) -> ChatHead | None:
    return await s.get(ChatHead, root_thread_id)


async def _view(
    s: AsyncSession, head: ChatHead, *, retains: bool, active: Any = UNSET
) -> HistoryOut:
    """The history state; `active` skips the lookup when the caller already knows it."""
    if active is UNSET:
        active = await s.get(ActiveTurn, head.root_thread_id)
    return HistoryOut(
        root_thread_id=head.root_thread_id,
        head_turn_id=head.head_turn_id,
        working_thread_id=head.working_thread_id,
        retains_branches=retains,
        active_turn=(
            ActiveTurnOut(
                turn_id=f"{active.thread_id}:{active.turn_index}",
                parent_turn_id=active.parent_turn_id,
            )
            if active
            else None
        ),
        version=head.version,
    )


async def get_history(db: Database, *, user_id: int, thread_id: str, retains: bool) -> HistoryOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        root = await s.get(Conversation, conv.root_thread_id)
        assert root is not None
        await ensure_head(s, root)
        head = await read_head(s, conv.root_thread_id)
        assert head is not None
        return await _view(s, head, retains=retains)


@dataclass
class Target:
    """Where a checkout goes: node `turn` of `thread` (turn = the baseline for none)."""

    thread: Conversation
    turn: int
    turn_id: str | None


async def resolve_target(
    s: AsyncSession, *, root_thread_id: str, user_id: int, turn_id: str | None
) -> Target:
    """Validate that the node belongs to the family, is owned by its thread and retained."""
    if turn_id is None:
        root = await s.get(Conversation, root_thread_id)
        assert root is not None
        return Target(root, root.forked_from_turn or 0, None)
    parsed = parse_node(turn_id)
    missing = NotFound(f"turn {turn_id} is not a retained turn of this conversation")
    if parsed is None:
        raise missing
    thread_id, k = parsed
    # One read: the thread, its branch row, and whether the node's record exists.
    row = (
        await s.execute(
            select(Conversation, ConversationBranch, WorkspaceSnapshot.id)
            .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
            .outerjoin(
                WorkspaceSnapshot,
                (WorkspaceSnapshot.thread_id == Conversation.thread_id)
                & (WorkspaceSnapshot.turn_index == k),
            )
            .where(Conversation.thread_id == thread_id)
        )
    ).first()
    if row is None:
        raise missing
    conv, branch, snapshot_id = row
    if conv.root_thread_id != root_thread_id or conv.user_id != user_id:
        raise missing
    if conv.deleted_at is not None or (branch is not None and branch.status != "active"):
        raise missing
    first = (branch.branch_point_turn if branch else (conv.forked_from_turn or 0)) + 1
    if not first <= k <= conv.turn_index or snapshot_id is None:
        raise missing
    return Target(conv, k, turn_id)


async def branch_point_target(
    s: AsyncSession, conv: Conversation, branch: ConversationBranch, *, user_id: int
) -> Target:
    """The node a branch hangs from (the baseline for a branch at 0)."""
    bp = branch.branch_point_turn
    if bp <= 0:
        return await resolve_target(
            s, root_thread_id=conv.root_thread_id, user_id=user_id, turn_id=None
        )
    family = await Family.load(s, conv.root_thread_id)
    owner = family.owner_of(branch.parent_thread_id, bp)
    return await resolve_target(
        s, root_thread_id=conv.root_thread_id, user_id=user_id, turn_id=f"{owner}:{bp}"
    )


async def draft_changes(s: AsyncSession, working_thread_id: str) -> list[str]:
    """What the working draft's edits changed since it was restored ([] = nothing to lose)."""
    branch = await s.get(ConversationBranch, working_thread_id)
    if branch is None or branch.status != "draft" or not branch.dirty:
        return []
    draft = await s.get(Conversation, working_thread_id)
    if draft is None:
        return []
    parent = await s.get(Conversation, branch.parent_thread_id)
    if parent is None:
        return []
    before = await resolve_restore_state(s, parent, branch.branch_point_turn)
    after = await live_state(s, draft)
    changed = []
    if before.objective != after.objective:
        changed.append("the objective")
    if before.document != after.document:
        changed.append("the document")

    def items(xs: list[Any], *attrs: str) -> list[tuple[Any, ...]]:
        return [tuple(getattr(x, a) for a in attrs) for x in xs]

    if items(before.preferences, "uid", "text", "locked") != items(
        after.preferences, "uid", "text", "locked"
    ):
        changed.append("the preferences")
    if items(before.todos, "uid", "text", "done", "depth") != items(
        after.todos, "uid", "text", "done", "depth"
    ):
        changed.append("the todos")
    # Edits that were all undone leave nothing to lose: the draft is clean again.
    return changed


def discard_message(changes: list[str], step: int) -> str:
    what = ", ".join(changes)
    return (
        f"Your edits to the workspace restored at step {step} ({what}) have not been sent "
        "and would be discarded. Check out anyway to discard them, or send a message "
        "there first to keep them on a new branch."
    )


async def _create_draft(s: AsyncSession, target: Target) -> str:
    """A hidden branch at the target node whose workspace is copied as of that node."""
    source = target.thread
    restore = await restore_source(s, source, target.turn)
    draft_id = new_thread_id()
    draft = Conversation(
        thread_id=draft_id,
        user_id=source.user_id,
        root_thread_id=source.root_thread_id,
        title=source.title,
        objective=restore.objective,
        turn_index=target.turn,
        message_count=2 * target.turn,
        created_at=now(),
        updated_at=now(),
    )
    # Written together with the copies (one unit of work, flushed by the first copy).
    s.add(draft)
    s.add(
        ConversationBranch(
            thread_id=draft_id,
            parent_thread_id=source.thread_id,
            branch_point_turn=target.turn,
            status="draft",
            dirty=False,
            created_at=now(),
        )
    )
    await copy_as_of_in(s, restore, draft_id)
    return draft_id


async def _drop_draft_if_unused(s: AsyncSession, thread_id: str, new_working: str) -> bool:
    if thread_id == new_working:
        return False
    branch = await s.get(ConversationBranch, thread_id)
    if branch is None or branch.status != "draft":
        return False
    await delete_thread_rows(s, thread_id)
    return True


async def selected_path(s: AsyncSession, target: Target) -> list[str]:
    """The node ids from the first turn to the target, oldest first, from the lineage."""
    if target.turn_id is None:
        return []
    ids: list[str] = []
    upper = target.turn
    for entry in await conv_repo.lineage(s, target.thread.thread_id):
        lower = entry.branch_point_turn
        if entry.parent_thread_id is None:
            root = await s.get(Conversation, entry.thread_id)
            lower = (root.forked_from_turn or 0) if root else 0
        ids.extend(f"{entry.thread_id}:{k}" for k in range(upper, lower, -1))
        upper = min(upper, lower)
    return list(reversed(ids))


async def switch_in(
    s: AsyncSession, head: ChatHead, target: Target, *, force: bool, user_id: int
) -> None:
    """Steps 5-9 of a checkout, inside the caller's transaction and lock."""
    changes = await draft_changes(s, head.working_thread_id)
    await fault_hook("detect")
    if changes and not force:
        branch = await s.get(ConversationBranch, head.working_thread_id)
        step = branch.branch_point_turn if branch else 0
        raise CheckoutWouldDiscardChanges(
            discard_message(changes, step), data={"message": discard_message(changes, step)}
        )
    if target.turn == target.thread.turn_index:
        new_working = target.thread.thread_id
    else:
        new_working = await _create_draft(s, target)
    await fault_hook("restore")
    await _drop_draft_if_unused(s, head.working_thread_id, new_working)
    head.head_turn_id = target.turn_id
    head.working_thread_id = new_working
    head.version += 1
    head.updated_at = now()
    await s.flush()
    await fault_hook("head")
    path = await selected_path(s, target)
    action: dict[str, Any] = {"type": "chat/historyCheckedOut"}
    if target.turn_id is not None:
        action["headTurnId"] = target.turn_id
    await action_log.append_chat_many(
        s,
        head.root_thread_id,
        [{"type": "chat/turnsLoaded", "turns": [{"id": n} for n in path]}, action],
    )
    await fault_hook("publish")


async def checkout(
    db: Database,
    *,
    user_id: int,
    thread_id: str,
    turn_id: str | None,
    expected_head_turn_id: Any = UNSET,
    force: bool = False,
    retains: bool,
) -> HistoryOut:
    """Move the family's head to `turn_id` (None = the baseline); see the module doc."""
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        root_id = conv.root_thread_id
        target = await resolve_target(s, root_thread_id=root_id, user_id=user_id, turn_id=turn_id)
        await fault_hook("validate")
        head = await lock_head(s, root_id, nowait=True)
        if expected_head_turn_id is not UNSET and expected_head_turn_id != head.head_turn_id:
            raise Conflict(
                f"the head moved: it is {head.head_turn_id or 'the baseline'}, "
                f"not {expected_head_turn_id or 'the baseline'}"
            )
        if await s.get(ActiveTurn, root_id) is not None:
            raise TurnInProgress("a turn is running in this conversation; wait or cancel it")
        await fault_hook("lease")
        if turn_id == head.head_turn_id:
            # already there: nothing to do
            return await _view(s, head, retains=retains, active=None)
        await switch_in(s, head, target, force=force, user_id=user_id)
        return await _view(s, head, retains=retains, active=None)


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
    first = (branch.branch_point_turn if branch else (conv.forked_from_turn or 0)) + 1
    if conv.turn_index < first:
        # A branch that owns no turn yet is its own tip: the head is its branch point.
        bp = first - 1
        family = await Family.load(s, head.root_thread_id)
        owner = family.owner_of(conv.thread_id, bp) if bp > 0 else None
        changes = await draft_changes(s, head.working_thread_id)
        if changes and not force:
            raise CheckoutWouldDiscardChanges(
                discard_message(changes, bp), data={"message": discard_message(changes, bp)}
            )
        await _drop_draft_if_unused(s, head.working_thread_id, conv.thread_id)
        head.head_turn_id = f"{owner}:{bp}" if owner else None
        head.working_thread_id = conv.thread_id
        head.version += 1
        head.updated_at = now()
        action: dict[str, Any] = {"type": "chat/historyCheckedOut"}
        if head.head_turn_id:
            action["headTurnId"] = head.head_turn_id
        await action_log.append_chat(s, head.root_thread_id, action)
        return
    tip = f"{conv.thread_id}:{conv.turn_index}"
    try:
        target = await resolve_target(
            s, root_thread_id=head.root_thread_id, user_id=user_id, turn_id=tip
        )
    except NotFound:
        # Linear pruning cut this thread back: its clock is ahead of its last retained
        # node, so continuing goes through a draft at that node (ids are never reused).
        kept = (
            await s.execute(
                select(func.max(WorkspaceSnapshot.turn_index)).where(
                    WorkspaceSnapshot.thread_id == conv.thread_id,
                    WorkspaceSnapshot.turn_index >= first,
                )
            )
        ).scalar_one_or_none()
        if kept is None:
            target = (
                await branch_point_target(s, conv, branch, user_id=user_id)
                if branch
                else (
                    await resolve_target(
                        s, root_thread_id=head.root_thread_id, user_id=user_id, turn_id=None
                    )
                )
            )
        else:
            target = await resolve_target(
                s,
                root_thread_id=head.root_thread_id,
                user_id=user_id,
                turn_id=f"{conv.thread_id}:{kept}",
            )
    await switch_in(s, head, target, force=force, user_id=user_id)


# ---- promotion and pruning ----


async def promote_draft(db: Database, runtime: AgentRuntime, thread_id: str) -> None:
    """Seed a draft's transcript and make it a real branch; on failure it stays a draft."""
    async with db.read() as s:
        branch = await s.get(ConversationBranch, thread_id)
        if branch is None or branch.status != "draft":
            return
        parent_id, bp = branch.parent_thread_id, branch.branch_point_turn
    try:
        await seed_transcript(
            runtime, source_thread_id=parent_id, target_thread_id=thread_id, turn=bp, kind="draft"
        )
        async with db.transaction() as s:
            await fault_hook("promote")
            await s.execute(
                update(ConversationBranch)
                .where(
                    ConversationBranch.thread_id == thread_id, ConversationBranch.status == "draft"
                )
                .values(status="active", dirty=False)
            )
    except Exception as exc:
        log.exception("promoting draft %s failed; it stays a draft", thread_id)
        try:
            await runtime.delete_thread(thread_id)
        except Exception:
            log.exception("could not remove the partial transcript of %s", thread_id)
        raise SeedingFailed(
            "the restored workspace could not become a branch (its transcript could not be "
            "written); your edits are kept, try sending again"
        ) from exc


@dataclass
class PruneResult:
    turn_ids: list[str] = field(default_factory=list)
    removed_threads: list[str] = field(default_factory=list)
    # thread -> highest turn it keeps; its transcript is cut back after commit
    truncated_threads: dict[str, int] = field(default_factory=dict)


async def prune_in(
    s: AsyncSession,
    family: Family,
    doomed: set[Node],
    *,
    keep_threads: set[str],
) -> PruneResult:
    """Delete the given nodes (snapshots, artifacts; whole threads when nothing is left)."""
    result = PruneResult()
    if not doomed:
        return result
    by_thread: dict[str, list[int]] = {}
    for thread_id, k in doomed:
        by_thread.setdefault(thread_id, []).append(k)
    for thread_id, ks in by_thread.items():
        owned_left = [k for (t, k) in family.nodes if t == thread_id and (t, k) not in doomed]
        if not owned_left and thread_id not in keep_threads:
            await delete_thread_rows(s, thread_id)
            result.removed_threads.append(thread_id)
        else:
            # The thread is cut back to its last retained turn: its live rows become
            # the workspace after that turn (read before its snapshots go), so that
            # turn stays restorable (`resolve_restore_state` reads the live rows then).
            keep_upto = max(owned_left, default=family.threads[thread_id].branch_point)
            conv = await s.get(Conversation, thread_id)
            assert conv is not None
            state = None
            if keep_upto < conv.turn_index:
                state = await resolve_restore_state(s, conv, keep_upto)
            await s.execute(
                delete(WorkspaceSnapshot).where(
                    WorkspaceSnapshot.thread_id == thread_id, WorkspaceSnapshot.turn_index.in_(ks)
                )
            )
            await s.execute(
                delete(Artifact).where(Artifact.thread_id == thread_id, Artifact.turn_index.in_(ks))
            )
            if state is not None:
                await replace_workspace_in(s, conv, state)
            result.truncated_threads[thread_id] = keep_upto
    # Threads that own no retained node and hang from a removed node or thread (at any
    # depth: repeat until nothing changes) are abandoned futures too.
    retained_owners = {n[0] for n in family.nodes if n not in doomed}
    changed = True
    while changed:
        changed = False
        for t in family.threads.values():
            if (
                t.parent_thread_id is None
                or t.thread_id in result.removed_threads
                or t.thread_id in keep_threads
                or t.thread_id in retained_owners
            ):
                continue
            anchor = family.owner_of(t.parent_thread_id, t.branch_point)
            if t.parent_thread_id in result.removed_threads or (
                t.branch_point > 0 and anchor is not None and (anchor, t.branch_point) in doomed
            ):
                await delete_thread_rows(s, t.thread_id)
                result.removed_threads.append(t.thread_id)
                changed = True
    result.turn_ids = sorted(node_key(n) for n in doomed)
    return result


async def linear_prune_in(
    s: AsyncSession, head: ChatHead, *, active: Node | None = None
) -> PruneResult:
    """On a linear host: remove every node not on the selected path (forks protected).

    `active` is the turn being started (its snapshot is already written): it is never
    pruned. The root thread always stays, since it names the family, even when none
    of its nodes does.
    """
    family = await Family.load(s, head.root_thread_id)
    selected = set(family.ancestors(parse_node(head.head_turn_id) if head.head_turn_id else None))
    if active is not None:
        selected.add(active)
    refs = await fork_references(s, list(family.threads))
    kept = selected | family.protected(refs)
    doomed = family.nodes - kept
    keep = {head.working_thread_id, head.root_thread_id} | {n[0] for n in kept}
    return await prune_in(s, family, doomed, keep_threads=keep)


async def after_prune(runtime: AgentRuntime, result: PruneResult) -> None:
    """Bring the checkpointer in line with a committed prune (best effort, logged)."""
    for thread_id in result.removed_threads:
        try:
            await runtime.delete_thread(thread_id)
        except Exception:
            log.exception("could not delete the transcript of pruned thread %s", thread_id)
    for thread_id, keep_upto in result.truncated_threads.items():
        try:
            messages = await runtime.raw_messages(thread_id)
            prefix = transcript_prefix(messages, keep_upto)
            if len(prefix) != len(messages):
                await runtime.delete_thread(thread_id)
                await runtime.seed(
                    thread_id=thread_id,
                    messages=prefix,
                    metadata={"source": "prune", "kept_through_turn": keep_upto},
                )
        except Exception:
            log.exception("could not cut back the transcript of %s", thread_id)


async def draft_transcript(
    runtime: AgentRuntime, s: AsyncSession, thread_id: str
) -> list[Any] | None:
    """A draft has no transcript of its own yet: it shows its parent's prefix."""
    branch = await s.get(ConversationBranch, thread_id)
    if branch is None or branch.status != "draft":
        return None
    return transcript_prefix(
        await runtime.raw_messages(branch.parent_thread_id), branch.branch_point_turn
    )


def utcnow() -> datetime:
    return datetime.now(UTC)
