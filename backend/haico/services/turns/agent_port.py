"""The agent's `WorkspacePort` over the database.

Every edit goes through the same live-edit functions as the REST face: an added
preference or todo through `haico.services.workspace.items.add_item` (two round trips on
PostgreSQL), any other edit through its `*_in` function in a transaction of its own.
Ownership is not checked here: the turn service checked it before the run started.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import assert_never

from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.port import (
    AddPreference,
    AddTodo,
    ArtifactView,
    ChangePreference,
    ChangeTodo,
    CreateArtifact,
    DocumentView,
    PreferenceView,
    SetDocument,
    SetObjective,
    TodoView,
    WorkspaceEdit,
    WorkspaceView,
    reads,
    resolve,
)
from haico.db.engine import Database
from haico.db.models import Conversation, Preference, Todo
from haico.db.repositories import items as items_repo
from haico.db.repositories import merge as merge_repo
from haico.db.repositories import threads as threads_repo
from haico.errors import NotFound
from haico.schemas.workspace import PreferencePatch, TodoPatch
from haico.services.merge.sides import path_nodes
from haico.services.workspace.edits import (
    create_artifact_in,
    set_objective_in,
    write_document_in,
)
from haico.services.workspace.items import (
    add_item,
    add_preference_in,
    add_todo_in,
    delete_preference_in,
    delete_todo_in,
    update_preference_in,
    update_todo_in,
)
from haico.services.workspace.state import (
    PreferenceState,
    TodoState,
    WorkspaceState,
    thread_and_live_state,
)


def _id(item_id: int | None) -> int:
    assert item_id is not None  # live rows always carry their id
    return item_id


def _items(
    preferences: Sequence[Preference | PreferenceState], todos: Sequence[Todo | TodoState]
) -> tuple[tuple[PreferenceView, ...], tuple[TodoView, ...]]:
    """Live preference and todo rows as the agent sees them."""
    return (
        tuple(PreferenceView(_id(p.id), p.uid, p.text, p.locked) for p in preferences),
        tuple(TodoView(_id(t.id), t.uid, t.text, t.done, t.depth) for t in todos),
    )


def view_of(state: WorkspaceState, turn_index: int) -> WorkspaceView:
    """A live `WorkspaceState` as the agent sees it."""
    doc = state.document
    preferences, todos = _items(state.preferences, state.todos)
    return WorkspaceView(
        objective=state.objective,
        document=DocumentView(doc.title, doc.content) if doc is not None else None,
        preferences=preferences,
        todos=todos,
        artifacts=tuple(ArtifactView(a.id, a.turn_index, a.kind, a.title) for a in state.artifacts),
        turn_index=turn_index,
    )


async def _thread(session: AsyncSession, thread_id: str) -> Conversation:
    conv = await threads_repo.get_thread(session, thread_id)
    if conv is None:
        raise NotFound(f"conversation {thread_id} not found")
    return conv


async def _write(
    s: AsyncSession, conv: Conversation, edit: WorkspaceEdit, before: WorkspaceView
) -> None:
    """Perform an edit `resolve` has checked against `before`."""
    match edit:
        case SetObjective(text=text):
            await set_objective_in(s, conv, text, announce_title=False)
        case SetDocument(title=title, content=content, append=append):
            await write_document_in(s, conv, title=title, content=content, append=append)
        case AddPreference(text=text, locked=locked):
            await add_preference_in(s, conv, text=text, locked=locked)
        case ChangePreference(position=position, remove=True):
            await delete_preference_in(s, conv, before.preferences[position - 1].id)
        case ChangePreference(position=position, text=text, locked=locked):
            patch = PreferencePatch(text=text, locked=locked)
            await update_preference_in(s, conv, before.preferences[position - 1].id, patch)
        case AddTodo(text=text, depth=depth):
            await add_todo_in(s, conv, text=text, depth=depth)
        case ChangeTodo(position=position, remove=True):
            await delete_todo_in(s, conv, before.todos[position - 1].id)
        case ChangeTodo(position=position, text=text, done=done, depth=depth):
            todo_patch = TodoPatch(text=text, done=done, depth=depth)
            await update_todo_in(s, conv, before.todos[position - 1].id, todo_patch)
        case CreateArtifact(title=title, content=content):
            await create_artifact_in(s, conv, title=title, content=content)
        case _:
            assert_never(edit)


class AgentWorkspace:
    """`WorkspacePort` for the agent runtime: live rows of a thread in `db`."""

    def __init__(self, db: Database) -> None:
        self.db = db

    async def read(self, thread_id: str) -> WorkspaceView:
        async with self.db.read() as s:
            found = await thread_and_live_state(s, thread_id)
        if found is None:
            raise NotFound(f"conversation {thread_id} not found")
        conv, state = found
        return view_of(state, conv.turn_index)

    async def merge_notes(
        self, thread_id: str, *, after_turn: int, before_turn: int
    ) -> tuple[str, ...]:
        """The descriptions of the merge nodes between two turns of the thread's path."""
        async with self.db.read() as s:
            nodes = await path_nodes(s, thread_id, after=after_turn, before=before_turn)
            return tuple(await merge_repo.notes_of(s, nodes))

    async def apply(self, thread_id: str, edit: WorkspaceEdit) -> WorkspaceView:
        if isinstance(edit, AddPreference | AddTodo) and not reads(edit):
            return await self._add(thread_id, edit)
        async with self.db.transaction() as s:
            conv = await _thread(s, thread_id)
            before = await _before(s, conv, reads(edit))
            await _write(s, conv, resolve(edit, before), before)
            return before

    async def _add(self, thread_id: str, edit: AddPreference | AddTodo) -> WorkspaceView:
        """An added preference or todo (`add_item`: two round trips on PostgreSQL)."""
        model: type[Preference] | type[Todo]
        match resolve(edit, _NOTHING_READ):
            case AddPreference(text=text, locked=locked):
                model, fields = Preference, {"text": text, "locked": locked}
            case AddTodo(text=text, depth=depth):
                model, fields = Todo, {"text": text, "done": False, "depth": depth}
            case other:
                raise AssertionError(f"{other} is not an add")
        conv, _ = await add_item(self.db, thread_id, model, fields, principal=None)
        return WorkspaceView(objective=conv.objective, document=None, turn_index=conv.turn_index)


# What an edit that reads no list (`reads`) is resolved against.
_NOTHING_READ = WorkspaceView(objective=None, document=None)


async def _before(s: AsyncSession, conv: Conversation, lists: frozenset[str]) -> WorkspaceView:
    """The live workspace as an edit reads it: the objective, the turn, and `lists`
    (the document and artifacts are left out: no edit is checked against them)."""
    preferences, todos = _items(
        await items_repo.list_preferences(s, conv.thread_id) if "preferences" in lists else [],
        await items_repo.list_todos(s, conv.thread_id) if "todos" in lists else [],
    )
    return WorkspaceView(
        objective=conv.objective,
        document=None,
        preferences=preferences,
        todos=todos,
        turn_index=conv.turn_index,
    )
