"""The agent's tools: workspace edits through the workspace service.

Each call opens its own transaction on the thread named in the run's config
(`configurable["db"]`, `configurable["thread_id"]`); ownership was checked by the turn
service before the run started. A tool never raises at the model: a bad position or
an invalid value comes back as an "Error: …" result, and nothing is written. Every
result carries an artifact `{"surfaces": [...]}` naming what changed, which the
runtime turns into `workspace_changed` events.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Database
from app.db.models import Conversation
from app.errors import DomainError, NotFound
from app.schemas import MAX_DEPTH, PreferencePatch, TodoPatch
from app.services.workspace import (
    PreferenceState,
    TodoState,
    add_preference_in,
    add_todo_in,
    create_artifact_in,
    delete_preference_in,
    delete_todo_in,
    live_state,
    set_objective_in,
    update_preference_in,
    update_todo_in,
    write_document_in,
)

ToolResult = tuple[str, dict[str, Any]]
Edit = Callable[[AsyncSession, Conversation], Awaitable[str]]

SURFACES = ("objective", "document", "preferences", "todos", "artifacts")


class ToolInputError(Exception):
    """A tool argument the workspace cannot honour (reported to the model, not raised)."""


def run_context(config: RunnableConfig) -> tuple[Database, str]:
    """The database and thread a run works on, from its config."""
    conf = config.get("configurable") or {}
    db, thread_id = conf.get("db"), conf.get("thread_id")
    if not isinstance(db, Database) or not isinstance(thread_id, str):
        raise RuntimeError("the run config must carry configurable 'db' and 'thread_id'")
    return db, thread_id


async def _apply(config: RunnableConfig, edit: Edit, *surfaces: str) -> ToolResult:
    db, thread_id = run_context(config)
    try:
        async with db.transaction() as s:
            conv = await s.get(Conversation, thread_id)
            if conv is None:
                raise NotFound(f"conversation {thread_id} not found")
            message = await edit(s, conv)
    except ToolInputError as exc:
        return f"Error: {exc}", {"surfaces": []}
    except DomainError as exc:
        return f"Error: {exc.message}", {"surfaces": []}
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]) for e in exc.errors())
        return f"Error: invalid value ({problems})", {"surfaces": []}
    return message, {"surfaces": list(surfaces)}


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _at(items: list[Any], position: int, kind: str) -> Any:
    if not 1 <= position <= len(items):
        have = f"there are {len(items)} {kind}s" if items else f"there are no {kind}s"
        raise ToolInputError(f"no {kind} at position {position} ({have}; positions are 1-based)")
    return items[position - 1]


async def _preference_at(s: AsyncSession, conv: Conversation, position: int) -> PreferenceState:
    pref: PreferenceState = _at((await live_state(s, conv)).preferences, position, "preference")
    return pref


async def _todo_at(s: AsyncSession, conv: Conversation, position: int) -> TodoState:
    todo: TodoState = _at((await live_state(s, conv)).todos, position, "todo")
    return todo


def _item_id(item: PreferenceState | TodoState) -> int:
    assert item.id is not None  # live rows always carry their id
    return item.id


def _require(text: str, what: str) -> str:
    if not text.strip():
        raise ToolInputError(f"{what} must not be empty")
    return text.strip()


# ---- objective and document ----


@tool(response_format="content_and_artifact")
async def set_objective(text: str, config: RunnableConfig) -> ToolResult:
    """Set the conversation's objective (what the researcher and you are building)."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        await set_objective_in(s, conv, _require(text, "the objective"))
        return f"Set the objective to “{_short(text)}”."

    return await _apply(config, edit, "objective")


@tool(response_format="content_and_artifact")
async def set_document_title(title: str, config: RunnableConfig) -> ToolResult:
    """Set the document's title."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        await write_document_in(s, conv, title=_require(title, "the title"))
        return f"Titled the document “{_short(title)}”."

    return await _apply(config, edit, "document")


@tool(response_format="content_and_artifact")
async def write_document(text: str, config: RunnableConfig) -> ToolResult:
    """Append `text` to the document as a new paragraph."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        await write_document_in(s, conv, append=_require(text, "the paragraph"))
        return f"Added a paragraph to the document: “{_short(text, 60)}”."

    return await _apply(config, edit, "document")


@tool(response_format="content_and_artifact")
async def replace_document(content: str, config: RunnableConfig) -> ToolResult:
    """Replace the whole document body with `content` (the title stays)."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        await write_document_in(s, conv, content=content)
        return f"Replaced the document body ({len(content.split())} words)."

    return await _apply(config, edit, "document")


# ---- preferences ----


@tool(response_format="content_and_artifact")
async def add_preference(text: str, config: RunnableConfig, locked: bool = False) -> ToolResult:
    """Add a preference; `locked=True` makes it a binding constraint."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        await add_preference_in(s, conv, text=_require(text, "the preference"), locked=locked)
        return f"Added {'locked ' if locked else ''}preference “{_short(text)}”."

    return await _apply(config, edit, "preferences")


@tool(response_format="content_and_artifact")
async def update_preference(position: int, text: str, config: RunnableConfig) -> ToolResult:
    """Reword the preference at 1-based `position`."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        pref = await _preference_at(s, conv, position)
        await update_preference_in(s, conv, _item_id(pref), PreferencePatch(text=text))
        return f"Reworded preference {position} to “{_short(text)}”."

    return await _apply(config, edit, "preferences")


async def _set_lock(config: RunnableConfig, position: int, locked: bool) -> ToolResult:
    async def edit(s: AsyncSession, conv: Conversation) -> str:
        pref = await _preference_at(s, conv, position)
        await update_preference_in(s, conv, _item_id(pref), PreferencePatch(locked=locked))
        verb = "Locked" if locked else "Unlocked"
        return f"{verb} preference {position} (“{_short(pref.text)}”)."

    return await _apply(config, edit, "preferences")


@tool(response_format="content_and_artifact")
async def lock_preference(position: int, config: RunnableConfig) -> ToolResult:
    """Lock the preference at 1-based `position`: it becomes a binding constraint."""
    return await _set_lock(config, position, True)


@tool(response_format="content_and_artifact")
async def unlock_preference(position: int, config: RunnableConfig) -> ToolResult:
    """Unlock the preference at 1-based `position`."""
    return await _set_lock(config, position, False)


@tool(response_format="content_and_artifact")
async def remove_preference(position: int, config: RunnableConfig) -> ToolResult:
    """Remove the preference at 1-based `position`."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        pref = await _preference_at(s, conv, position)
        await delete_preference_in(s, conv, _item_id(pref))
        return f"Removed preference {position} (“{_short(pref.text)}”)."

    return await _apply(config, edit, "preferences")


# ---- todos ----


def _check_depth(depth: int) -> int:
    if not 0 <= depth <= MAX_DEPTH:
        raise ToolInputError(f"depth must be between 0 and {MAX_DEPTH}")
    return depth


@tool(response_format="content_and_artifact")
async def add_todo(text: str, config: RunnableConfig, depth: int = 0) -> ToolResult:
    """Add a todo at the end of the list; `depth` nests it (0 = top level)."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        await add_todo_in(s, conv, text=_require(text, "the todo"), depth=_check_depth(depth))
        where = f" at depth {depth}" if depth else ""
        return f"Added todo “{_short(text)}”{where}."

    return await _apply(config, edit, "todos")


@tool(response_format="content_and_artifact")
async def add_subtodo(text: str, config: RunnableConfig) -> ToolResult:
    """Add a todo nested one level under the last todo."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        todos = (await live_state(s, conv)).todos
        if not todos:
            raise ToolInputError("there is no todo to nest under; add a todo first")
        depth = _check_depth(todos[-1].depth + 1)
        await add_todo_in(s, conv, text=_require(text, "the todo"), depth=depth)
        return f"Added sub-todo “{_short(text)}” under “{_short(todos[-1].text, 40)}”."

    return await _apply(config, edit, "todos")


async def _set_done(config: RunnableConfig, position: int, done: bool | None) -> ToolResult:
    async def edit(s: AsyncSession, conv: Conversation) -> str:
        todo = await _todo_at(s, conv, position)
        value = (not todo.done) if done is None else done
        await update_todo_in(s, conv, _item_id(todo), TodoPatch(done=value))
        state = "done" if value else "not done"
        return f"Marked todo {position} (“{_short(todo.text)}”) {state}."

    return await _apply(config, edit, "todos")


@tool(response_format="content_and_artifact")
async def done_todo(position: int, config: RunnableConfig) -> ToolResult:
    """Mark the todo at 1-based `position` done."""
    return await _set_done(config, position, True)


@tool(response_format="content_and_artifact")
async def undo_todo(position: int, config: RunnableConfig) -> ToolResult:
    """Mark the todo at 1-based `position` not done."""
    return await _set_done(config, position, False)


@tool(response_format="content_and_artifact")
async def toggle_todo(position: int, config: RunnableConfig) -> ToolResult:
    """Flip the done state of the todo at 1-based `position`."""
    return await _set_done(config, position, None)


@tool(response_format="content_and_artifact")
async def nest_todo(position: int, depth: int, config: RunnableConfig) -> ToolResult:
    """Set the nesting depth of the todo at 1-based `position` (0 = top level)."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        todo = await _todo_at(s, conv, position)
        await update_todo_in(s, conv, _item_id(todo), TodoPatch(depth=_check_depth(depth)))
        return f"Moved todo {position} (“{_short(todo.text)}”) to depth {depth}."

    return await _apply(config, edit, "todos")


@tool(response_format="content_and_artifact")
async def remove_todo(position: int, config: RunnableConfig) -> ToolResult:
    """Remove the todo at 1-based `position`."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        todo = await _todo_at(s, conv, position)
        await delete_todo_in(s, conv, _item_id(todo))
        return f"Removed todo {position} (“{_short(todo.text)}”)."

    return await _apply(config, edit, "todos")


# ---- artifacts ----


@tool(response_format="content_and_artifact")
async def create_artifact(title: str, content: str, config: RunnableConfig) -> ToolResult:
    """Create an artifact (a named piece of output) stamped with the current turn."""

    async def edit(s: AsyncSession, conv: Conversation) -> str:
        await create_artifact_in(s, conv, title=_require(title, "the title"), content=content)
        return f"Created artifact “{_short(title)}” (turn {conv.turn_index})."

    return await _apply(config, edit, "artifacts")


TOOLS: list[BaseTool] = [
    set_objective,
    set_document_title,
    write_document,
    replace_document,
    add_preference,
    update_preference,
    lock_preference,
    unlock_preference,
    remove_preference,
    add_todo,
    add_subtodo,
    done_todo,
    undo_todo,
    toggle_todo,
    nest_todo,
    remove_todo,
    create_artifact,
]
TOOLS_BY_NAME: dict[str, BaseTool] = {t.name: t for t in TOOLS}
