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

from langchain_core.messages import BaseMessage, HumanMessage
from sqlalchemy import delete, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.runtime import AgentRuntime
from app.db.engine import Database
from app.db.models import (
    Artifact,
    Conversation,
    ConversationBranch,
    Document,
    Preference,
    Todo,
    WorkspaceSnapshot,
)
from app.errors import InvalidBranchPoint, InvalidInput, InvalidTurn, SeedingFailed
from app.events import log as action_log
from app.schemas import BranchWorkspaceOverride, ConversationOut, DocumentOut
from app.services.conversations import get_owned, new_thread_id, now, to_view
from app.services.workspace import (
    PreferenceState,
    RestoreSource,
    TodoState,
    WorkspaceState,
    copy_as_of_in,
    new_uid,
    owner_of_turn,
    replace_workspace_in,
    restore_source,
    state_of,
)

log = logging.getLogger("haico.branching")

# Tests replace this to inject a failure at a named phase ("copy", "seed", "activate").
FaultHook = Callable[[str], Awaitable[None]]


async def _no_fault(_: str) -> None:
    return None


fault_hook: FaultHook = _no_fault


def transcript_prefix(messages: list[BaseMessage], turn: int) -> list[BaseMessage]:
    """Every message strictly before the (turn+1)-th user message."""
    seen = 0
    for i, message in enumerate(messages):
        if isinstance(message, HumanMessage):
            seen += 1
            if seen == turn + 1:
                return list(messages[:i])
    return list(messages)


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
    conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id)
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
        target.objective = source.objective
        await s.flush()
        await copy_as_of_in(s, source, target.thread_id)
        return
    state = apply_override(await state_of(s, source), override)
    target.objective = state.objective
    await copy_workspace_rows(s, target=target, state=state)


async def copy_workspace_rows(
    s: AsyncSession, *, target: Conversation, state: WorkspaceState
) -> None:
    """Give `target` the workspace `state` and copies of its artifacts (never snapshots)."""
    await replace_workspace_in(s, target, state, fresh=True)
    ids = [a.id for a in state.artifacts]
    if ids:
        rows = (
            (await s.execute(select(Artifact).where(Artifact.id.in_(ids)).order_by(Artifact.id)))
            .scalars()
            .all()
        )
        for a in rows:
            s.add(
                Artifact(
                    thread_id=target.thread_id,
                    turn_index=a.turn_index,
                    kind=a.kind,
                    title=a.title,
                    content=a.content,
                    created_at=a.created_at,
                )
            )
    await s.flush()


async def delete_thread_rows(s: AsyncSession, thread_id: str) -> None:
    """Remove every SQL row that belongs to one thread (compensation and pruning)."""
    for model in (Artifact, Preference, Todo, Document, WorkspaceSnapshot):
        await s.execute(delete(model).where(model.thread_id == thread_id))
    await s.execute(delete(ConversationBranch).where(ConversationBranch.thread_id == thread_id))
    await s.execute(delete(Conversation).where(Conversation.thread_id == thread_id))


async def compensate(db: Database, runtime: AgentRuntime, thread_id: str) -> None:
    """Undo phase 1 (and any phase-2 writes) for a thread whose creation failed."""
    try:
        async with db.transaction() as s:
            await delete_thread_rows(s, thread_id)
    except Exception:
        log.exception("compensation could not delete the rows of %s", thread_id)
    try:
        await runtime.delete_thread(thread_id)
    except Exception:
        log.exception("compensation could not delete the checkpoints of %s", thread_id)


async def seed_transcript(
    runtime: AgentRuntime, *, source_thread_id: str, target_thread_id: str, turn: int, kind: str
) -> None:
    messages = await runtime.raw_messages(source_thread_id)
    prefix = transcript_prefix(messages, turn)
    await runtime.seed(
        thread_id=target_thread_id,
        messages=prefix,
        metadata={"source": kind, "source_thread_id": source_thread_id, "from_turn": turn},
    )


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
        conv, _, source = await _validate(
            s, user_id=user_id, thread_id=thread_id, from_turn=from_turn, is_fork=False
        )
        target = Conversation(
            thread_id=new_id,
            user_id=conv.user_id,
            root_thread_id=conv.root_thread_id,
            title=conv.title,
            turn_index=from_turn,
            # Display only: two messages per inherited turn.
            message_count=2 * from_turn,
            created_at=now(),
            updated_at=now(),
        )
        s.add(target)
        await s.flush()
        branch = ConversationBranch(
            thread_id=new_id,
            parent_thread_id=conv.thread_id,
            branch_point_turn=from_turn,
            reason=(reason or "").strip() or None,
            status="pending",
            created_at=now(),
        )
        s.add(branch)
        await _copy_into(s, source, target, override)
        await fault_hook("copy")
    return await _finish(
        db,
        runtime,
        source_thread_id=thread_id,
        target=target,
        branch=branch,
        from_turn=from_turn,
        kind="branch",
    )


async def _finish(
    db: Database,
    runtime: AgentRuntime,
    *,
    source_thread_id: str,
    target: Conversation,
    branch: ConversationBranch | None,
    from_turn: int,
    kind: str,
) -> ConversationOut:
    try:
        await fault_hook("seed")
        await seed_transcript(
            runtime,
            source_thread_id=source_thread_id,
            target_thread_id=target.thread_id,
            turn=from_turn,
            kind=kind,
        )
        async with db.transaction() as s:
            if branch is not None:
                await s.execute(
                    update(ConversationBranch)
                    .where(ConversationBranch.thread_id == target.thread_id)
                    .values(status="active")
                )
                await action_log.append_catalogue(
                    s, target.root_thread_id, target.thread_id, "created", kind=kind
                )
            else:
                await s.execute(
                    update(Conversation)
                    .where(Conversation.thread_id == target.thread_id)
                    .values(building=False)
                )
                await action_log.append_catalogue(
                    s, target.root_thread_id, target.thread_id, "created", kind=kind
                )
            await fault_hook("activate")
    except Exception as exc:
        log.exception("creating %s %s failed; compensating", kind, target.thread_id)
        await compensate(db, runtime, target.thread_id)
        raise SeedingFailed(
            f"the {kind} could not be created (its transcript could not be written); "
            "nothing was kept, try again"
        ) from exc
    if branch is not None:
        branch.status = "active"
    target.building = False
    return to_view(target, branch)


async def create_fork(
    db: Database, runtime: AgentRuntime, *, user_id: int, thread_id: str, from_turn: int
) -> ConversationOut:
    """Start a new family from node `from_turn` of `thread_id`, recording where it came from."""
    new_id = new_thread_id()
    async with db.transaction() as s:
        conv, _, restore = await _validate(
            s, user_id=user_id, thread_id=thread_id, from_turn=from_turn, is_fork=True
        )
        source = (
            await owner_of_turn(s, conv.thread_id, from_turn) if from_turn > 0 else conv.thread_id
        )
        target = Conversation(
            thread_id=new_id,
            user_id=conv.user_id,
            root_thread_id=new_id,
            title=f"{conv.title} (fork)",
            turn_index=from_turn,
            message_count=2 * from_turn,
            forked_from_thread_id=source,
            forked_from_turn=from_turn,
            building=True,
            created_at=now(),
            updated_at=now(),
        )
        s.add(target)
        await s.flush()
        await _copy_into(s, restore, target, None)
        await fault_hook("copy")
    return await _finish(
        db,
        runtime,
        source_thread_id=thread_id,
        target=target,
        branch=None,
        from_turn=from_turn,
        kind="fork",
    )
