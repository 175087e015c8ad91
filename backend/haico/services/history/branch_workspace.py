"""The workspace a new branch or fork starts with: the source's as of the branch point,
or that state edited by the caller's preview (`BranchWorkspaceOverride`).

Artifacts are copied; snapshots never are.
"""

from __future__ import annotations

import dataclasses

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import Conversation
from haico.db.repositories import workspace as workspace_repo
from haico.schemas.history import BranchWorkspaceOverride
from haico.schemas.workspace import DocumentOut
from haico.services.workspace.snapshots import (
    RestoreSource,
    copy_as_of_in,
    replace_workspace_in,
    state_of,
)
from haico.services.workspace.state import PreferenceState, TodoState, WorkspaceState, new_uid


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


async def copy_into(
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
