"""Branches and forks: a new thread whose workspace and transcript start as of a node.

Three phases, because the SQL rows and the checkpointer are two stores with no shared
transaction:

1. One transaction writes the new thread: its conversation row (turn clock at the
   branch point, so its first message is turn k+1), the branch row with status
   `pending` (a fork instead carries `building`), and copies of the workspace as of
   turn k and of the artifacts up to k (`branch_workspace`). Snapshots are never copied.
2. The transcript prefix (every message before the (k+1)-th user message) is written
   into the new checkpointer thread with one state update. No SQL session is held.
3. One transaction flips the branch to `active` (or clears `building`).

If phase 2 or 3 fails, every row created for the new thread and its checkpointer
thread are removed and `SeedingFailed` (502) is raised. A crash between phases leaves
a hidden `pending` row that the janitor reclaims.

Phase 1 and the undo of its rows (`_build`) are here, side by side; phases 2 and 3
with the removal of a partial transcript are `seeding`'s, shared with the promotion
of a draft (`promotion`), whose rows already exist and are kept on failure.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.runtime import AgentRuntime
from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.models import Conversation, ConversationBranch
from haico.db.repositories import threads as repo
from haico.domain import BranchStatus, new_thread_id, now, suffixed_title
from haico.errors import AlreadyExists, InvalidBranchPoint, InvalidInput, InvalidTurn
from haico.events import log as action_log
from haico.schemas.conversations import ConversationOut
from haico.schemas.history import BranchWorkspaceOverride
from haico.services.access import rule as access
from haico.services.access.principal import Feature, Principal, require
from haico.services.access.rule import Deed, Role
from haico.services.families.conversations import get_for, to_view
from haico.services.families.model import Lineage
from haico.services.history.branch_workspace import copy_into
from haico.services.history.seeding import Activate, log, seed_then_activate
from haico.services.workspace.snapshots import RestoreSource, restore_source


async def _validate(
    s: AsyncSession, *, principal: Principal, thread_id: str, from_turn: int, is_fork: bool
) -> tuple[Conversation, ConversationBranch | None, RestoreSource]:
    # A fork copies what the caller may read into a family of its own; a branch edits.
    need = Role.VIEWER if is_fork else Role.EDITOR
    conv, branch = await get_for(s, principal, thread_id=thread_id, need=need)
    if from_turn < 0:
        raise InvalidInput("from_turn: must be >= 0")
    if from_turn > conv.turn_index:
        raise InvalidTurn(
            f"turn {from_turn} does not exist (the thread is at turn {conv.turn_index})"
        )
    if not is_fork and branch is not None and from_turn <= branch.branch_point_turn:
        raise InvalidBranchPoint(
            f"turn {from_turn} belongs to an ancestor: branch this thread after turn "
            f"{branch.branch_point_turn}, or branch its parent"
        )
    return conv, branch, await restore_source(s, conv, from_turn)


async def create_branch(
    db: Database,
    runtime: AgentRuntime,
    *,
    principal: Principal,
    thread_id: str,
    from_turn: int,
    reason: str | None = None,
    override: BranchWorkspaceOverride | None = None,
    replay: bool = False,
) -> ConversationOut:
    """Branch `thread_id` at `from_turn` (see the module doc for the phases); `replay`:
    the branch of a replay, which the what-if switch allows, not the branching one."""
    if not replay:
        require(principal, Feature.BRANCHING)
    new_id = new_thread_id()
    async with db.transaction() as s:
        conv, source_branch, source = await _validate(
            s, principal=principal, thread_id=thread_id, from_turn=from_turn, is_fork=False
        )
        target = _new_thread(conv, new_id, root_thread_id=conv.root_thread_id, turn=from_turn)
        # Inserted with the thread (the copy sets the same value, so no UPDATE follows).
        target.objective = source.objective
        s.add(target)
        await s.flush()
        branch = ConversationBranch(
            thread_id=new_id,
            parent_thread_id=conv.thread_id,
            branch_point_turn=from_turn,
            reason=(reason or "").strip() or None,
            status=BranchStatus.PENDING,
            created_at=now(),
        )
        s.add(branch)
        await copy_into(s, source, target, override)
        await fault(s, Step.COPY)

    async def activate(s: AsyncSession) -> None:
        await repo.set_branch_status(s, new_id, BranchStatus.ACTIVE)

    await _build(
        db,
        runtime,
        source_thread_id=thread_id,
        target=target,
        kind="branch",
        activate=activate,
        source_is_draft=source_branch is not None and source_branch.status == BranchStatus.DRAFT,
    )
    branch.status = BranchStatus.ACTIVE
    return to_view(target, branch)


async def create_fork(
    db: Database,
    runtime: AgentRuntime,
    *,
    principal: Principal,
    thread_id: str,
    from_turn: int,
    fork_thread_id: str | None = None,
) -> ConversationOut:
    """Start a new family from node `from_turn` of `thread_id`, recording where it came from.

    `fork_thread_id` lets a client choose the new root's id (AHP `createChat`).
    """
    access.permit(principal, Deed.FORK)
    new_id = fork_thread_id or new_thread_id()
    async with db.transaction() as s:
        if fork_thread_id is not None and await repo.get_thread(s, fork_thread_id) is not None:
            raise AlreadyExists(f"conversation {fork_thread_id} already exists")
        conv, _, restore = await _validate(
            s, principal=principal, thread_id=thread_id, from_turn=from_turn, is_fork=True
        )
        source = (
            (await Lineage.load(s, conv.thread_id)).owner_of(from_turn)
            if from_turn > 0
            else conv.thread_id
        )
        target = _new_thread(conv, new_id, root_thread_id=new_id, turn=from_turn)
        target.user_id = principal.id  # a grantee's fork is the grantee's own family
        target.title = suffixed_title(conv.title, " (fork)")
        target.forked_from_thread_id = source
        target.forked_from_turn = from_turn
        target.building = True
        s.add(target)
        await s.flush()
        await copy_into(s, restore, target, None)
        await fault(s, Step.COPY)

    async def activate(s: AsyncSession) -> None:
        await repo.finish_fork(s, new_id)

    await _build(
        db, runtime, source_thread_id=thread_id, target=target, kind="fork", activate=activate
    )
    target.building = False
    return to_view(target, None)


def _new_thread(
    conv: Conversation, thread_id: str, *, root_thread_id: str, turn: int
) -> Conversation:
    """A thread starting at `turn` of `conv`: its clock at the branch point."""
    return Conversation(
        thread_id=thread_id,
        user_id=conv.user_id,
        root_thread_id=root_thread_id,
        title=conv.title,
        turn_index=turn,
        # Display only: two messages per inherited turn.
        message_count=2 * turn,
        created_at=now(),
        updated_at=now(),
    )


async def _build(
    db: Database,
    runtime: AgentRuntime,
    *,
    source_thread_id: str,
    target: Conversation,
    kind: str,
    activate: Activate,
    source_is_draft: bool | None = None,
) -> None:
    """Phases 2 and 3 of a new branch or fork; its rows are deleted if they fail."""

    async def activate_and_announce(s: AsyncSession) -> None:
        await activate(s)
        await action_log.append_catalogue(
            s, target.root_thread_id, target.thread_id, "created", kind=kind
        )

    async def undo_logged() -> None:
        try:
            async with db.transaction() as s:
                await repo.delete_thread_rows(s, target.thread_id)
        except Exception:
            log.exception("compensation could not delete the rows of %s", target.thread_id)

    await seed_then_activate(
        db,
        runtime,
        source_thread_id=source_thread_id,
        target_thread_id=target.thread_id,
        turn=target.turn_index,
        kind=kind,
        activate=activate_and_announce,
        undo=undo_logged,
        failure=(
            f"the {kind} could not be created (its transcript could not be written); "
            "nothing was kept, try again"
        ),
        source_is_draft=source_is_draft,
    )
