"""Opening a turn: the lease, the clock, snapshot k and `turnStarted`, committed together.

A send's first read decides its route (`open_turn`): the posted-to thread with its
branch row and its family's head. When the thread is the working thread and not a
draft, the turn opens on that read at once. Otherwise the read answers a `Detour`
(nothing written), and `open_after` does what must come first, then opens the turn:

- the thread is not the working one: an implicit checkout of its tip, committed on
  its own under the head lock (`prepare_working`), which also says whether the thread
  the turn runs on is a draft;
- the working thread is a draft (a restored view, found by the first read, or made by
  that checkout): it becomes a branch with the same id (`promote_known_draft`, from
  the branch row already read), committed on its own; then the turn opens. A failure
  after that leaves the branch, holding the draft's edits, and a send again goes on it.

Two ways to open, to the same rows:

- Optimistic (PostgreSQL, on a host that keeps branches, the owner sending): the
  thread with its head and its live workspace are read in one statement, without a
  transaction; the writes and `turnStarted` go in one autocommit statement whose
  guards (`dialect.guard`) fail it, writing nothing, if the thread row or the head row
  changed since they were read. Two round trips where the locked way takes five. A
  draft's promotion changes neither row, so the open after it writes from the same
  read; a change in between fails a guard and the locked way answers.
- Locked: one transaction that locks the thread and the head row before reading. It
  serves SQLite, linear hosts (the open prunes), grantees, a send after an implicit
  checkout, and an optimistic open whose guard failed.

Either way the turn exists with all its rows or not at all, and a second send to a
family with a turn running fails on the lease's primary key (`TurnInProgress`). An
open after a detour that finds the thread no longer the working one (a checkout
landed in between) answers `Conflict`.

A send may create its conversation (`Send.create`, the studio's first send): a thread
that does not exist yet is inserted in the locked way's transaction, so the
conversation and its first turn are committed together. A send that fails before its
turn opened leaves no empty conversation behind.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TypeVar

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.dialect import GuardFailed, Write, moved
from haico.db.driver import Driver
from haico.db.engine import Database, fault
from haico.db.faults import Step, Window
from haico.db.models import ChatHead, Conversation, ConversationBranch
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import threads as repo
from haico.db.repositories.live import LiveRows
from haico.db.repositories.workspace import body_digests
from haico.domain import BranchStatus, NodeId, now
from haico.errors import Conflict, NotFound, TurnInProgress
from haico.events import actions
from haico.events import log as action_log
from haico.services.access import rule as access
from haico.services.access.principal import Feature, Principal, require
from haico.services.access.rule import Role
from haico.services.big_trees import pruning
from haico.services.families.conversations import add_root_if_missing, check_visible, get_for
from haico.services.history import heads
from haico.services.history.promotion import promote_known_draft
from haico.services.turns.agent_port import view_of
from haico.services.turns.running import RunningTurn
from haico.services.workspace.snapshots import capture_snapshot, snapshot_of
from haico.services.workspace.state import WorkspaceState, state_of_rows


@dataclass(frozen=True)
class Send:
    """What a send asks for: `content` on `thread_id`, by `principal`, served by this
    process (`process_id`, the lease's owner)."""

    process_id: str
    principal: Principal
    thread_id: str
    content: str
    # create the thread (a root, owned by `principal`) if it does not exist yet
    create: bool = False
    # a replay's step: its branch is the replay's own, made under the what-if switch
    replay: bool = False


@dataclass
class Opened:
    turn: RunningTurn
    started: actions.Action
    pruned: pruning.PruneResult


@dataclass(frozen=True)
class Draft:
    """A working draft that a send makes a branch before its turn opens: its parent
    and branch point, as the send's read found them."""

    thread_id: str
    parent_thread_id: str
    branch_point_turn: int


@dataclass
class _Seen:
    """The optimistic open's unlocked read (PostgreSQL): reused by the open that follows
    a draft's promotion, whose guards fail it if the thread or the head changed since."""

    conv: Conversation
    head: ChatHead
    version: int
    live: LiveRows


@dataclass(frozen=True)
class Detour:
    """What a send's first read found to do before its turn can open: an implicit
    checkout (`checkout`: the thread is not the working one; what follows is decided
    under the checkout's lock), or making the working draft `draft` a branch."""

    checkout: bool
    draft: Draft | None = None
    seen: _Seen | None = None


def _detour(
    conv: Conversation,
    branch: ConversationBranch | None,
    head: ChatHead,
    seen: _Seen | None = None,
) -> Detour | None:
    """None when the send opens at once (the thread is the working one, not a draft)."""
    if head.working_thread_id != conv.thread_id:
        return Detour(checkout=True)
    if branch is None or branch.status != BranchStatus.DRAFT:
        return None
    return Detour(
        checkout=False,
        draft=Draft(conv.thread_id, branch.parent_thread_id, branch.branch_point_turn),
        seen=seen,
    )


async def open_turn(db: Database, settings: Settings, send: Send) -> Opened | Detour:
    """Open a turn on `send.thread_id` (see the module doc) with one read of the thread
    and its head, or answer the `Detour` that read found (`open_after`)."""
    try:
        if db.dialect.is_postgres and settings.history_retains_branches and not send.create:
            first = await _unlocked(lambda: _read_and_open(db, send))
            if first is not None:
                return first
        return await _open_locked(db, settings, send)
    except IntegrityError as exc:
        raise TurnInProgress("a turn is already running in this conversation") from exc


async def open_after(
    db: Database,
    runtime: AgentRuntime,
    settings: Settings,
    send: Send,
    detour: Detour,
    *,
    force: bool,
) -> Opened:
    """The rest of a send whose first read found `detour`: the implicit checkout
    (committed on its own), the working draft made a branch (`promote_known_draft`,
    committed on its own), then the turn opened. A failure after the branch is made
    leaves the branch, holding the draft's edits; a send again goes on it.

    `Conflict` when a checkout moved the family's history in between."""
    draft = detour.draft
    if not send.replay:
        # Sending anywhere but the head (another thread's tip, a restored step) is
        # branching: a linear condition refuses it before anything moves.
        require(send.principal, Feature.BRANCHING)
    if detour.checkout:
        working, draft = await prepare_working(
            db, principal=send.principal, thread_id=send.thread_id, force=force
        )
        send = replace(send, thread_id=working)
    if draft is not None:
        await promote_known_draft(
            db,
            runtime,
            thread_id=draft.thread_id,
            parent_thread_id=draft.parent_thread_id,
            branch_point_turn=draft.branch_point_turn,
        )
        await db.faults(Step.BRANCHED)
    try:
        seen = None if detour.checkout else detour.seen
        if seen is not None:
            again = await _unlocked(lambda: _opened_seen(db, send, seen))
            if again is not None:
                return again
        opened = await _open_locked(db, settings, send)
    except IntegrityError as exc:
        raise TurnInProgress("a turn is already running in this conversation") from exc
    if isinstance(opened, Detour):
        # A checkout landed since the first read: the user moved on.
        raise Conflict("the conversation's history moved while sending; retry")
    return opened


T = TypeVar("T")


async def _unlocked(way: Callable[[], Awaitable[T]]) -> T | None:
    """`way`, an optimistic open; None where the locked way must answer (a guard
    failed: the thread or the head changed since the read)."""
    try:
        return await way()
    except (DBAPIError, GuardFailed) as exc:
        if isinstance(exc, IntegrityError) or not moved(exc):
            raise
        return None


async def _read_and_open(db: Database, send: Send) -> Opened | Detour | None:
    """The optimistic open's read, then its write unless the read found a detour; None
    where the locked way must answer (no head row yet, a caller who is not the owner)."""
    async with db.driver() as d:
        found = await heads_repo.read_with_head(d, send.thread_id)
        if found is None:
            return None
        conv, branch, head, version, live = found
        check_visible(conv, branch)
        if access.settled(send.principal, conv, Role.EDITOR) is None:
            return None  # the caller's shares decide: the locked way reads them
        seen = _Seen(conv, head, version, live)
        detour = _detour(conv, branch, head, seen)
        if detour is not None:
            return detour
        return await _open_seen(d, db, send, seen)


async def _opened_seen(db: Database, send: Send, seen: _Seen) -> Opened:
    async with db.driver() as d:
        return await _open_seen(d, db, send, seen)


async def _open_seen(d: Driver, db: Database, send: Send, seen: _Seen) -> Opened:
    """The optimistic open's write, from the rows `seen` read: one autocommit statement
    whose guards fail it if the thread row or the head row changed since."""
    conv, head = seen.conv, seen.head
    k = conv.turn_index + 1
    doc, state = state_of_rows(conv, seen.live)
    snapshot = snapshot_of(
        conv,
        doc,
        state,
        turn_index=k,
        user_message=send.content,
        postgres=True,
        stored=db.bodies,
    )
    clock = repo.clock_advance_if_unchanged(conv, k, seen.version)
    opening = _opening(conv, head, send, k, snapshot, state, clock=clock)
    await d.fault(Window.UNLOCKED_READ)
    (entry,) = await action_log.append_chat_now(
        d, conv.root_thread_id, opening.started, after=opening.writes
    )
    db.stored_bodies(body_digests(snapshot))  # committed with the statement
    return opening.opened(entry.seq)


async def _open_locked(db: Database, settings: Settings, send: Send) -> Opened | Detour:
    async with db.transaction() as s:
        if send.create and await add_root_if_missing(s, send.principal, thread_id=send.thread_id):
            await fault(s, Step.OPEN)
        conv, branch, head = await heads.lock_for(
            s, send.principal, thread_id=send.thread_id, need=Role.EDITOR
        )
        detour = _detour(conv, branch, head)
        if detour is not None:
            # (nothing written: a thread created just now is its family's working one)
            return detour
        opened = await _write(s, conv, head, send)
        if not settings.history_retains_branches:
            opened.pruned = await pruning.linear_prune_in(
                s, head, active=NodeId(conv.thread_id, opened.turn.turn_index)
            )
        return opened


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
    db: Database, *, principal: Principal, thread_id: str, force: bool
) -> tuple[str, Draft | None]:
    """Make the posted-to thread the family's working thread (an implicit checkout of
    its tip, committed on its own) and return the thread the turn runs on, with the
    draft to make a branch first when that thread is one (a thread whose latest turns
    were pruned continues through a draft)."""
    async with db.transaction() as s:
        conv, branch = await get_for(
            s,
            principal,
            thread_id=thread_id,
            need=Role.EDITOR,
        )
        head = await heads.lock_head(s, conv.root_thread_id, nowait=False)
        if await heads_repo.get_active_turn(s, conv.root_thread_id) is not None:
            raise TurnInProgress("a turn is already running in this conversation")
        if head.working_thread_id != conv.thread_id:
            if branch is not None and branch.status == BranchStatus.DRAFT:
                raise NotFound("this restored view was discarded by a later checkout")
            await heads.make_working_in(s, head, conv, branch, force=force, principal=principal)
        working = head.working_thread_id
        working_branch = branch if working == conv.thread_id else await repo.get_branch(s, working)
        if working_branch is None or working_branch.status != BranchStatus.DRAFT:
            return working, None
        return working, Draft(
            working, working_branch.parent_thread_id, working_branch.branch_point_turn
        )
