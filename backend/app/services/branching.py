"""Branches and forks: a new thread whose workspace and transcript start as of a node.

Three phases, because the SQL rows and the checkpointer are two stores with no shared
transaction:

1. One transaction writes the new thread: its conversation row (turn clock at the
   branch point, so its first message is turn k+1), the branch row with status
   `pending` (a fork instead carries `building`), and copies of the workspace as of
   turn k and of the artifacts up to k. Snapshots are never copied.
2. The transcript prefix (every message before the (k+1)-th user message) is written
   into the new checkpointer thread with one state update. No SQL session is held.
3. One transaction flips the branch to `active` (or clears `building`).

If phase 2 or 3 fails, every row created for the new thread and its checkpointer
thread are removed and `SeedingFailed` (502) is raised. A crash between phases leaves
a hidden `pending` row that the janitor reclaims.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.messages import BaseMessage
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.runtime import AgentRuntime
from app.db.engine import Database, fault
from app.db.faults import Step
from app.db.models import Conversation, ConversationBranch
from app.db.repositories import threads as repo
from app.db.repositories import workspace as workspace_repo
from app.domain import BranchStatus, new_thread_id, now, suffixed_title
from app.errors import (
    AlreadyExists,
    InvalidBranchPoint,
    InvalidInput,
    InvalidTurn,
    SeedingFailed,
)
from app.events import log as action_log
from app.schemas import BranchWorkspaceOverride, ConversationOut, DocumentOut
from app.services.access import Role
from app.services.conversations import get_owned, to_view
from app.services.family import Lineage
from app.services.snapshots import (
    RestoreSource,
    copy_as_of_in,
    replace_workspace_in,
    restore_source,
    state_of,
)
from app.services.workspace_state import PreferenceState, TodoState, WorkspaceState, new_uid

log = logging.getLogger("haico.branching")


def transcript_prefix(messages: list[BaseMessage], turn: int) -> list[BaseMessage]:
    """The transcript through turn `turn`, cut by turn index (see `prefix_through`)."""
    return list(AgentRuntime.prefix_through(messages, turn))


def apply_override(
    state: WorkspaceState, override: BranchWorkspaceOverride | None
) -> WorkspaceState:
    """The edited preview, field by field; what the override omits comes from `state`."""
    if override is None:
        return state
    given = override.model_fields_set
    objective = override.objective if "objective" in given else state.objective
    document = state.document
    if "document" in given:
        if override.document is None or not override.document.content:
            document = None
        else:
            title = override.document.title
            if title is None:
                title = state.document.title if state.document else ""
            document = DocumentOut(title=title, content=override.document.content)
    preferences = state.preferences
    if "preferences" in given and override.preferences is not None:
        preferences = [
            PreferenceState(uid=p.uid or new_uid(), text=p.text, locked=p.locked)
            for p in override.preferences
        ]
    todos = state.todos
    if "todos" in given and override.todos is not None:
        todos = [
            TodoState(uid=t.uid or new_uid(), text=t.text, done=t.done, depth=t.depth)
            for t in override.todos
        ]
    return dataclasses.replace(
        state, objective=objective, document=document, preferences=preferences, todos=todos
    )


async def _validate(
    s: AsyncSession, *, user_id: int, thread_id: str, from_turn: int, is_fork: bool
) -> tuple[Conversation, ConversationBranch | None, RestoreSource]:
    # A fork copies what the caller may read into a family of its own; a branch edits.
    need = Role.VIEWER if is_fork else Role.EDITOR
    conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id, need=need)
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


async def _copy_into(
    s: AsyncSession,
    source: RestoreSource,
    target: Conversation,
    override: BranchWorkspaceOverride | None,
) -> None:
    """The workspace as of the branch point, edited by the override when one is given."""
    if override is None:
        await copy_as_of_in(s, source, target)
        return
    state = apply_override(await state_of(s, source), override)
    target.objective = state.objective
    await copy_workspace_rows(s, target=target, state=state)


async def copy_workspace_rows(
    s: AsyncSession, *, target: Conversation, state: WorkspaceState
) -> None:
    """Give `target` the workspace `state` and copies of its artifacts (never snapshots)."""
    await replace_workspace_in(s, target, state, fresh=True)
    await workspace_repo.copy_artifacts(s, target.thread_id, ids=[a.id for a in state.artifacts])
    await s.flush()


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


async def create_branch(
    db: Database,
    runtime: AgentRuntime,
    *,
    user_id: int,
    thread_id: str,
    from_turn: int,
    reason: str | None = None,
    override: BranchWorkspaceOverride | None = None,
) -> ConversationOut:
    """Branch `thread_id` at `from_turn` (see the module doc for the phases)."""
    new_id = new_thread_id()
    async with db.transaction() as s:
        conv, source_branch, source = await _validate(
            s, user_id=user_id, thread_id=thread_id, from_turn=from_turn, is_fork=False
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
        await _copy_into(s, source, target, override)
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
    user_id: int,
    thread_id: str,
    from_turn: int,
    fork_thread_id: str | None = None,
) -> ConversationOut:
    """Start a new family from node `from_turn` of `thread_id`, recording where it came from.

    `fork_thread_id` lets a client choose the new root's id (AHP `createChat`).
    """
    new_id = fork_thread_id or new_thread_id()
    async with db.transaction() as s:
        if fork_thread_id is not None and await repo.get_thread(s, fork_thread_id) is not None:
            raise AlreadyExists(f"conversation {fork_thread_id} already exists")
        conv, _, restore = await _validate(
            s, user_id=user_id, thread_id=thread_id, from_turn=from_turn, is_fork=True
        )
        source = (
            (await Lineage.load(s, conv.thread_id)).owner_of(from_turn)
            if from_turn > 0
            else conv.thread_id
        )
        target = _new_thread(conv, new_id, root_thread_id=new_id, turn=from_turn)
        target.user_id = user_id  # a grantee's fork is the grantee's own family
        target.title = suffixed_title(conv.title, " (fork)")
        target.forked_from_thread_id = source
        target.forked_from_turn = from_turn
        target.building = True
        s.add(target)
        await s.flush()
        await _copy_into(s, restore, target, None)
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


async def promote_draft(db: Database, runtime: AgentRuntime, thread_id: str) -> None:
    """Seed a draft's transcript and make it a real branch; on failure it stays a draft."""
    async with db.read() as s:
        branch = await repo.get_branch(s, thread_id)
        if branch is None or branch.status != BranchStatus.DRAFT:
            return
        parent_id, bp = branch.parent_thread_id, branch.branch_point_turn

    async def activate(s: AsyncSession) -> None:
        await fault(s, Step.PROMOTE)
        await repo.set_branch_status(s, thread_id, BranchStatus.ACTIVE, only_if=BranchStatus.DRAFT)

    async def keep_draft() -> None:
        return None

    await seed_then_activate(
        db,
        runtime,
        source_thread_id=parent_id,
        target_thread_id=thread_id,
        turn=bp,
        kind="draft",
        activate=activate,
        undo=keep_draft,
        failure=(
            "the restored workspace could not become a branch (its transcript could not be "
            "written); your edits are kept, try sending again"
        ),
    )


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
