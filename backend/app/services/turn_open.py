"""Opening a turn: the lease, the clock, snapshot k and `turnStarted`, committed together.

Two ways to the same rows:

- Optimistic (PostgreSQL, the common case: the posted-to thread is the working one
  and not a draft, on a host that keeps branches): the thread with its head and its
  live workspace are read in one statement, without a transaction; the writes and
  `turnStarted` go in one autocommit statement whose guards (`dialect.guard`) fail
  it, writing nothing, if the thread row or the head row changed since they were
  read. Two round trips where the locked way takes five.
- Locked: one transaction that locks the thread and the head row before reading. It
  serves SQLite, linear hosts (the open prunes), a send right after
  `prepare_working`, and an optimistic open whose guard failed (it is retried so).

Either way the turn exists with all its rows or not at all, and a second send to a
family with a turn running fails on the lease's primary key (`TurnInProgress`).

A send may create its conversation (`Send.create`, the studio's first send): a thread
that does not exist yet is inserted in the locked way's transaction, so the
conversation and its first turn are committed together. A send that fails before its
turn opened leaves no empty conversation behind.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.runtime import AgentRuntime
from app.config import Settings
from app.db.dialect import GuardFailed, Write, moved
from app.db.engine import Database, fault
from app.db.faults import Step, Window
from app.db.models import ChatHead, Conversation, ConversationBranch
from app.db.repositories import heads as heads_repo
from app.db.repositories import threads as repo
from app.db.repositories.workspace import body_digests
from app.domain import BranchStatus, NodeId, now
from app.errors import Conflict, NotFound, TurnInProgress
from app.events import actions
from app.events import log as action_log
from app.services import heads, pruning
from app.services.access import Role
from app.services.agent_workspace import view_of
from app.services.branching import promote_draft
from app.services.conversations import add_root_if_missing, check_visible, get_owned
from app.services.running_turn import RunningTurn
from app.services.snapshots import capture_snapshot, snapshot_of
from app.services.workspace_state import WorkspaceState, state_of_rows


class NotWorking(Exception):
    """The posted-to thread is not the family's working thread (or is a draft)."""


@dataclass(frozen=True)
class Send:
    """What a send asks for: `content` on `thread_id`, by `user_id`, served by this
    process (`process_id`, the lease's owner)."""

    process_id: str
    user_id: int
    thread_id: str
    content: str
    # create the thread (a root, owned by `user_id`) if it does not exist yet
    create: bool = False


@dataclass
class Opened:
    turn: RunningTurn
    started: actions.Action
    pruned: pruning.PruneResult


async def open_turn(db: Database, settings: Settings, send: Send, *, prepared: bool) -> Opened:
    """Open a turn on `send.thread_id` (see the module doc).

    Raises `NotWorking` when the thread must first become the working thread, and
    `Conflict` when it still is not after `prepare_working` (`prepared`)."""
    try:
        unlocked = settings.history_retains_branches and not (prepared or send.create)
        if db.dialect.is_postgres and unlocked:
            try:
                opened = await _open_unlocked(db, send)
            except (DBAPIError, GuardFailed) as exc:
                if isinstance(exc, IntegrityError) or not moved(exc):
                    raise
                opened = None  # the thread or the head changed since the read
            if opened is not None:
                return opened
        return await _open_locked(db, settings, send, prepared=prepared)
    except IntegrityError as exc:
        raise TurnInProgress("a turn is already running in this conversation") from exc


async def _open_unlocked(db: Database, send: Send) -> Opened | None:
    """The optimistic open, both statements run on the driver; None where the locked
    way must answer (no head row yet)."""
    async with db.driver() as d:
        found = await heads_repo.read_with_head(d, send.thread_id)
        if found is None:
            return None
        conv, branch, head, version, live = found
        check_visible(conv, branch)
        if conv.user_id != send.user_id:
            return None  # not the owner: the locked way checks the caller's role
        _check_working(conv, branch, head, prepared=False)
        k = conv.turn_index + 1
        doc, state = state_of_rows(conv, live)
        snapshot = snapshot_of(
            conv,
            doc,
            state,
            turn_index=k,
            user_message=send.content,
            postgres=True,
            stored=db.bodies,
        )
        clock = repo.clock_advance_if_unchanged(conv, k, version)
        opening = _opening(conv, head, send, k, snapshot, state, clock=clock)
        await d.fault(Window.UNLOCKED_READ)
        (entry,) = await action_log.append_chat_now(
            d, conv.root_thread_id, opening.started, after=opening.writes
        )
        db.stored_bodies(body_digests(snapshot))  # committed with the statement
        return opening.opened(entry.seq)


async def _open_locked(db: Database, settings: Settings, send: Send, *, prepared: bool) -> Opened:
    async with db.transaction() as s:
        if send.create and await add_root_if_missing(
            s, thread_id=send.thread_id, user_id=send.user_id
        ):
            await fault(s, Step.OPEN)
        conv, branch, head = await heads.lock_owned_with_head(
            s, thread_id=send.thread_id, user_id=send.user_id, need=Role.EDITOR
        )
        _check_working(conv, branch, head, prepared=prepared)
        opened = await _write(s, conv, head, send)
        if not settings.history_retains_branches:
            opened.pruned = await pruning.linear_prune_in(
                s, head, active=NodeId(conv.thread_id, opened.turn.turn_index)
            )
        return opened


def _check_working(
    conv: Conversation, branch: ConversationBranch | None, head: ChatHead, *, prepared: bool
) -> None:
    draft = branch is not None and branch.status == BranchStatus.DRAFT
    if head.working_thread_id != conv.thread_id or draft:
        if prepared:
            # A checkout landed since `prepare_working`: the user moved on.
            raise Conflict("the conversation's history moved while sending; retry")
        raise NotWorking


@dataclass
class _Opening:
    """A turn's opening, prepared: its writes, the turn and its `turnStarted`."""

    writes: list[Write]
    turn: RunningTurn
    started: actions.Action

    def opened(self, started_seq: int) -> Opened:
        self.turn.started_seq = started_seq
        return Opened(self.turn, self.started, pruning.PruneResult())


async def _write(s: AsyncSession, conv: Conversation, head: ChatHead, send: Send) -> Opened:
    """Snapshot the live workspace (read here) and write the opening with
    `turnStarted`, in the session's transaction (the locked way)."""
    k = conv.turn_index + 1
    snapshot, state = await capture_snapshot(
        s, conv, turn_index=k, user_message=send.content, author=action_log.grantee(conv.user_id)
    )
    clock = repo.clock_advance(conv, k)
    opening = _opening(conv, head, send, k, snapshot, state, clock=clock)
    (entry,) = await action_log.append_chat(
        s, conv.root_thread_id, opening.started, after=opening.writes
    )
    return opening.opened(entry.seq)


def _opening(
    conv: Conversation,
    head: ChatHead,
    send: Send,
    k: int,
    snapshot: list[Write],
    opened_on: WorkspaceState,
    *,
    clock: Write,
) -> _Opening:
    """The opening of turn `k` on `conv` (`clock` moves its clock there): the head's
    version bump (a guard: the head row must still be as read), the lease, the clock,
    snapshot k, and `turnStarted` (naming a grantee who sends, as snapshot k does).
    The host, not the client, chooses the parent: the current head."""
    root_id = conv.root_thread_id
    parent = head.head_turn_id
    # No read of the family's active turn first: its row is the lease, and inserting
    # a second one fails on the primary key (`IntegrityError`).
    writes = [
        heads_repo.turn_opened(head),
        heads_repo.lease_take(
            root_thread_id=root_id,
            thread_id=conv.thread_id,
            turn_index=k,
            parent_turn_id=parent,
            user_message=send.content,
            process_id=send.process_id,
        ),
        clock,
        *snapshot,
    ]
    turn = RunningTurn(
        root_thread_id=root_id,
        thread_id=conv.thread_id,
        turn_index=k,
        parent_turn_id=parent,
        content=send.content,
        user_id=conv.user_id,
        start=view_of(opened_on, k),
        branch_profile_id=conv.profile_id,
    )
    started = actions.turn_started(
        turn.node_id,
        parent_turn_id=parent,
        text=send.content,
        started_at=now().isoformat(),
        author=action_log.grantee(conv.user_id),
    )
    return _Opening(writes, turn, started)


async def prepare_working(
    db: Database, runtime: AgentRuntime, *, user_id: int, thread_id: str, force: bool
) -> str:
    """Make the posted-to thread the family's working thread and return the thread
    the turn runs on.

    Posting to another thread is an implicit checkout of its tip, committed on its
    own; a thread whose latest turns were pruned continues through a draft. A
    working draft is then promoted to a real branch (502 if that fails).
    """
    async with db.transaction() as s:
        conv, branch = await get_owned(
            s,
            thread_id=thread_id,
            user_id=user_id,
            need=Role.EDITOR,
        )
        head = await heads.lock_head(s, conv.root_thread_id, nowait=False)
        if await heads_repo.get_active_turn(s, conv.root_thread_id) is not None:
            raise TurnInProgress("a turn is already running in this conversation")
        if head.working_thread_id != conv.thread_id:
            if branch is not None and branch.status == BranchStatus.DRAFT:
                raise NotFound("this restored view was discarded by a later checkout")
            await heads.make_working_in(s, head, conv, branch, force=force, user_id=user_id)
        working = head.working_thread_id
        working_branch = await repo.get_branch(s, working)
        is_draft = working_branch is not None and working_branch.status == BranchStatus.DRAFT
    if is_draft:
        await promote_draft(db, runtime, working)
    return working
