"""The agent's tools: workspace edits through the `WorkspacePort` the runtime was given.

Each call applies one edit, in one transaction, to the thread named in the run's config
(`configurable["workspace"]`, `configurable["thread_id"]`); ownership was checked by the
turn service before the run started. A tool never raises at the model: a bad position or
an invalid value comes back as an "Error: …" result, and nothing is written. Every
result carries an artifact `{"surfaces": [...]}` naming what changed, which the
runtime turns into `workspace_changed` events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, tool
from pydantic import ValidationError

from haico.agent.port import (
    AddPreference,
    AddTodo,
    ChangePreference,
    ChangeTodo,
    CreateArtifact,
    SetDocument,
    SetObjective,
    WorkspaceEdit,
    WorkspacePort,
    WorkspaceView,
)
from haico.errors import DomainError

ToolResult = tuple[str, dict[str, Any]]
# Words the result of an edit from the workspace as it stood just before it.
Wording = Callable[[WorkspaceView], str]

SURFACES = ("objective", "document", "preferences", "todos", "artifacts")


def run_context(config: RunnableConfig) -> tuple[WorkspacePort, str]:
    """The workspace port and thread a run works on, from its config."""
    conf = config.get("configurable") or {}
    workspace, thread_id = conf.get("workspace"), conf.get("thread_id")
    if not isinstance(workspace, WorkspacePort) or not isinstance(thread_id, str):
        raise RuntimeError("the run config must carry configurable 'workspace' and 'thread_id'")
    return workspace, thread_id


async def _apply(
    config: RunnableConfig, edit: WorkspaceEdit, wording: Wording, *surfaces: str
) -> ToolResult:
    workspace, thread_id = run_context(config)
    try:
        before = await workspace.apply(thread_id, edit)
    except DomainError as exc:
        return f"Error: {exc.message}", {"surfaces": []}
    except ValidationError as exc:
        problems = "; ".join(str(e["msg"]) for e in exc.errors())
        return f"Error: invalid value ({problems})", {"surfaces": []}
    return wording(before), {"surfaces": list(surfaces)}


def _short(text: str, limit: int = 80) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ---- objective and document ----


@tool(response_format="content_and_artifact")
async def set_objective(text: str, config: RunnableConfig) -> ToolResult:
    """Set the conversation's objective (what the researcher and you are building)."""
    return await _apply(
        config,
        SetObjective(text),
        lambda _: f"Set the objective to “{_short(text)}”.",
        "objective",
    )


@tool(response_format="content_and_artifact")
async def set_document_title(title: str, config: RunnableConfig) -> ToolResult:
    """Set the document's title."""
    return await _apply(
        config,
        SetDocument(title=title),
        lambda _: f"Titled the document “{_short(title)}”.",
        "document",
    )


@tool(response_format="content_and_artifact")
async def write_document(text: str, config: RunnableConfig) -> ToolResult:
    """Append `text` to the document as a new paragraph."""
    return await _apply(
        config,
        SetDocument(append=text),
        lambda _: f"Added a paragraph to the document: “{_short(text, 60)}”.",
        "document",
    )


@tool(response_format="content_and_artifact")
async def replace_document(content: str, config: RunnableConfig) -> ToolResult:
    """Replace the whole document body with `content` (the title stays)."""
    return await _apply(
        config,
        SetDocument(content=content),
        lambda _: f"Replaced the document body ({len(content.split())} words).",
        "document",
    )


# ---- preferences ----


@tool(response_format="content_and_artifact")
async def add_preference(text: str, config: RunnableConfig, locked: bool = False) -> ToolResult:
    """Add a preference; `locked=True` makes it a binding constraint."""
    return await _apply(
        config,
        AddPreference(text, locked),
        lambda _: f"Added {'locked ' if locked else ''}preference “{_short(text)}”.",
        "preferences",
    )


@tool(response_format="content_and_artifact")
async def update_preference(position: int, text: str, config: RunnableConfig) -> ToolResult:
    """Reword the preference at 1-based `position`."""
    return await _apply(
        config,
        ChangePreference(position, text=text),
        lambda _: f"Reworded preference {position} to “{_short(text)}”.",
        "preferences",
    )


async def _set_lock(config: RunnableConfig, position: int, locked: bool) -> ToolResult:
    def wording(before: WorkspaceView) -> str:
        pref = before.preferences[position - 1]
        verb = "Locked" if locked else "Unlocked"
        return f"{verb} preference {position} (“{_short(pref.text)}”)."

    return await _apply(config, ChangePreference(position, locked=locked), wording, "preferences")


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

    def wording(before: WorkspaceView) -> str:
        pref = before.preferences[position - 1]
        return f"Removed preference {position} (“{_short(pref.text)}”)."

    return await _apply(config, ChangePreference(position, remove=True), wording, "preferences")


# ---- todos ----


@tool(response_format="content_and_artifact")
async def add_todo(text: str, config: RunnableConfig, depth: int = 0) -> ToolResult:
    """Add a todo at the end of the list; `depth` nests it (0 = top level)."""
    where = f" at depth {depth}" if depth else ""
    return await _apply(
        config,
        AddTodo(text, depth),
        lambda _: f"Added todo “{_short(text)}”{where}.",
        "todos",
    )


@tool(response_format="content_and_artifact")
async def add_subtodo(text: str, config: RunnableConfig) -> ToolResult:
    """Add a todo nested one level under the last todo."""

    def wording(before: WorkspaceView) -> str:
        parent = before.todos[-1]
        return f"Added sub-todo “{_short(text)}” under “{_short(parent.text, 40)}”."

    return await _apply(config, AddTodo(text, nest_under_last=True), wording, "todos")


async def _set_done(config: RunnableConfig, position: int, done: bool | None) -> ToolResult:
    def wording(before: WorkspaceView) -> str:
        todo = before.todos[position - 1]
        value = (not todo.done) if done is None else done
        state = "done" if value else "not done"
        return f"Marked todo {position} (“{_short(todo.text)}”) {state}."

    edit = ChangeTodo(position, toggle=True) if done is None else ChangeTodo(position, done=done)
    return await _apply(config, edit, wording, "todos")


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

    def wording(before: WorkspaceView) -> str:
        todo = before.todos[position - 1]
        return f"Moved todo {position} (“{_short(todo.text)}”) to depth {depth}."

    return await _apply(config, ChangeTodo(position, depth=depth), wording, "todos")


@tool(response_format="content_and_artifact")
async def remove_todo(position: int, config: RunnableConfig) -> ToolResult:
    """Remove the todo at 1-based `position`."""

    def wording(before: WorkspaceView) -> str:
        todo = before.todos[position - 1]
        return f"Removed todo {position} (“{_short(todo.text)}”)."

    return await _apply(config, ChangeTodo(position, remove=True), wording, "todos")


# ---- artifacts ----


@tool(response_format="content_and_artifact")
async def create_artifact(title: str, content: str, config: RunnableConfig) -> ToolResult:
    """Create an artifact (a named piece of output) stamped with the current turn."""
    return await _apply(
        config,
        CreateArtifact(title, content),
        lambda before: f"Created artifact “{_short(title)}” (turn {before.turn_index}).",
        "artifacts",
    )


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
