"""The agent behind its `WorkspacePort`: tools and the graph on an in-memory workspace
(no database), and the database implementation refusing an edit without writing."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from pydantic import ValidationError

from haico.agent.graph import build_graph
from haico.agent.models import OfflineChatModel
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
    StartingFrom,
    TodoView,
    WorkspaceEdit,
    WorkspacePort,
    WorkspaceView,
    resolve,
)
from haico.agent.tools import TOOLS_BY_NAME
from haico.db.engine import Database
from haico.db.repositories import live as live_repo
from haico.db.repositories import workspace as workspace_repo
from haico.errors import InvalidInput, NotFound
from haico.schemas.workspace import MAX_DEPTH
from haico.services.access import users
from haico.services.families import conversations
from haico.services.turns.agent_port import AgentWorkspace
from tests.agent.conftest import updated_at

THREAD = "th_memory"
BACKEND = Path(__file__).resolve().parents[2]


class MemoryWorkspace:
    """A `WorkspacePort` held in memory: one thread, no storage."""

    def __init__(self, turn_index: int = 1) -> None:
        self.view = WorkspaceView(objective=None, document=None, turn_index=turn_index)
        self._ids = 0

    def _id(self) -> int:
        self._ids += 1
        return self._ids

    def _thread(self, thread_id: str) -> WorkspaceView:
        if thread_id != THREAD:
            raise NotFound(f"conversation {thread_id} not found")
        return self.view

    async def read(self, thread_id: str) -> WorkspaceView:
        return self._thread(thread_id)

    async def apply(self, thread_id: str, edit: WorkspaceEdit) -> WorkspaceView:
        before = self._thread(thread_id)
        self.view = self._after(before, resolve(edit, before))
        return before

    def _after(self, ws: WorkspaceView, edit: WorkspaceEdit) -> WorkspaceView:
        match edit:
            case SetObjective(text=text):
                return replace(ws, objective=text)
            case SetDocument(title=title, content=content, append=append):
                doc = ws.document or DocumentView("", "")
                body = content if content is not None else doc.content
                if append is not None:
                    body = f"{body.rstrip()}\n\n{append}" if body.strip() else append
                return replace(ws, document=DocumentView(title or doc.title, body))
            case AddPreference(text=text, locked=locked):
                pref = PreferenceView(self._id(), f"p{self._ids}", text, locked)
                return replace(ws, preferences=(*ws.preferences, pref))
            case ChangePreference(position=n, text=text, locked=locked, remove=remove):
                prefs = list(ws.preferences)
                if remove:
                    del prefs[n - 1]
                else:
                    old = prefs[n - 1]
                    prefs[n - 1] = replace(
                        old,
                        text=old.text if text is None else text,
                        locked=old.locked if locked is None else locked,
                    )
                return replace(ws, preferences=tuple(prefs))
            case AddTodo(text=text, depth=depth):
                todo = TodoView(self._id(), f"t{self._ids}", text, False, depth)
                return replace(ws, todos=(*ws.todos, todo))
            case ChangeTodo(position=n, text=text, done=done, depth=depth, remove=remove):
                todos = list(ws.todos)
                if remove:
                    del todos[n - 1]
                else:
                    old = todos[n - 1]
                    todos[n - 1] = replace(
                        old,
                        text=old.text if text is None else text,
                        done=old.done if done is None else done,
                        depth=old.depth if depth is None else depth,
                    )
                return replace(ws, todos=tuple(todos))
            case CreateArtifact(title=title):
                art = ArtifactView(self._id(), ws.turn_index, "text", title)
                return replace(ws, artifacts=(*ws.artifacts, art))
        raise AssertionError(edit)


def _config(port: WorkspacePort) -> RunnableConfig:
    return {"configurable": {"workspace": port, "thread_id": THREAD}}


async def _call(port: WorkspacePort, name: str, **args: Any) -> tuple[str, list[str]]:
    call = {"name": name, "args": args, "id": "call_1", "type": "tool_call"}
    message = await TOOLS_BY_NAME[name].ainvoke(call, _config(port))
    assert isinstance(message, ToolMessage) and isinstance(message.artifact, dict)
    return str(message.content), list(message.artifact["surfaces"])


def test_the_agent_package_imports_neither_storage_nor_services() -> None:
    code = (
        "import sys, haico.agent.runtime, haico.agent.graph, haico.agent.tools\n"
        "import haico.agent.prompts\n"
        "bad = sorted(m for m in sys.modules if m.split('.')[:2] in (['haico', 'db'], "
        "['haico', 'services'], ['haico', 'api']))\n"
        "assert not bad, bad\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=BACKEND, check=True)


async def test_tools_word_their_results_from_the_workspace_before_the_edit() -> None:
    ws = MemoryWorkspace(turn_index=4)
    assert await _call(ws, "set_objective", text="  Ship v1 ") == (
        "Set the objective to “Ship v1”.",
        ["objective"],
    )
    assert (await _call(ws, "set_document_title", title="Plan"))[1] == ["document"]
    await _call(ws, "write_document", text="First")
    await _call(ws, "write_document", text="Second")
    assert ws.view.document == DocumentView("Plan", "First\n\nSecond")
    assert (await _call(ws, "replace_document", content="one two three"))[0] == (
        "Replaced the document body (3 words)."
    )

    await _call(ws, "add_preference", text="concise")
    assert (await _call(ws, "add_preference", text="cite", locked=True))[0] == (
        "Added locked preference “cite”."
    )
    assert (await _call(ws, "unlock_preference", position=2))[0] == (
        "Unlocked preference 2 (“cite”)."
    )
    assert await _call(ws, "remove_preference", position=1) == (
        "Removed preference 1 (“concise”).",
        ["preferences"],
    )
    assert [(p.text, p.locked) for p in ws.view.preferences] == [("cite", False)]

    assert (await _call(ws, "add_todo", text="a", depth=1))[0] == "Added todo “a” at depth 1."
    assert (await _call(ws, "add_subtodo", text="b"))[0] == "Added sub-todo “b” under “a”."
    assert (await _call(ws, "toggle_todo", position=2))[0] == "Marked todo 2 (“b”) done."
    assert (await _call(ws, "toggle_todo", position=2))[0] == "Marked todo 2 (“b”) not done."
    assert (await _call(ws, "nest_todo", position=2, depth=0))[0] == (
        "Moved todo 2 (“b”) to depth 0."
    )
    assert [(t.text, t.depth, t.done) for t in ws.view.todos] == [("a", 1, False), ("b", 0, False)]
    assert await _call(ws, "create_artifact", title="Notes", content="x") == (
        "Created artifact “Notes” (turn 4).",
        ["artifacts"],
    )


@pytest.mark.parametrize(
    ("name", "args", "error"),
    [
        (
            "remove_preference",
            {"position": 3},
            "no preference at position 3 (there are 2 preferences; positions are 1-based)",
        ),
        (
            "done_todo",
            {"position": 1},
            "no todo at position 1 (there are no todos; positions are 1-based)",
        ),
        ("add_subtodo", {"text": "x"}, "there is no todo to nest under; add a todo first"),
        (
            "add_todo",
            {"text": "x", "depth": MAX_DEPTH + 1},
            f"depth must be between 0 and {MAX_DEPTH}",
        ),
        ("set_objective", {"text": "   "}, "the objective must not be empty"),
        ("write_document", {"text": ""}, "the paragraph must not be empty"),
        ("create_artifact", {"title": " ", "content": "x"}, "the title must not be empty"),
    ],
)
async def test_a_refused_edit_is_an_error_result_and_changes_nothing(
    name: str, args: dict[str, Any], error: str
) -> None:
    ws = MemoryWorkspace()
    await _call(ws, "add_preference", text="one")
    await _call(ws, "add_preference", text="two")
    before = ws.view
    assert await _call(ws, name, **args) == (f"Error: {error}", [])
    assert ws.view == before


async def test_the_graph_runs_turns_on_a_workspace_without_a_database() -> None:
    ws = MemoryWorkspace()
    graph = build_graph(OfflineChatModel(), None)
    text = "objective: Map the field; prefer: brief; lock preference 1; todo: read; subtodo: 2019"
    out = await graph.ainvoke({"messages": [HumanMessage(content=text)]}, _config(ws))
    assert ws.view.objective == "Map the field"
    assert [(p.text, p.locked) for p in ws.view.preferences] == [("brief", True)]
    assert [(t.text, t.depth) for t in ws.view.todos] == [("read", 0), ("2019", 1)]
    reply = out["messages"][-1]
    assert isinstance(reply, AIMessage) and str(reply.content).startswith("Done.")

    # The prompt is rendered from the port's view.
    out = await graph.ainvoke(
        {"messages": [HumanMessage(content="how are we doing?")]}, _config(ws)
    )
    assert "the objective is “Map the field”" in str(out["messages"][-1].content)
    assert "1 preferences (1 locked); 2 todos (0 done)" in str(out["messages"][-1].content)


# ---- the database implementation ----


async def test_agent_workspace_refuses_a_bad_edit_and_writes_nothing(db: Database) -> None:
    user = await users.ensure_local(db, name="port-test")
    thread_id = (await conversations.create(db, principal=user, title="port")).thread_id
    ws = AgentWorkspace(db)
    assert isinstance(ws, WorkspacePort)
    await ws.apply(thread_id, AddPreference("one", locked=True))
    await ws.apply(thread_id, AddTodo("a"))
    before = await ws.read(thread_id)
    stamp = await updated_at(db, thread_id)

    refused: list[tuple[WorkspaceEdit, type[Exception], str]] = [
        (
            ChangePreference(3, remove=True),
            InvalidInput,
            "no preference at position 3 (there are 1 preferences; positions are 1-based)",
        ),
        (ChangeTodo(0, toggle=True), InvalidInput, "no todo at position 0"),
        (ChangeTodo(1, depth=MAX_DEPTH + 1), InvalidInput, "depth must be between 0 and"),
        (AddTodo("  ", nest_under_last=True), InvalidInput, "the todo must not be empty"),
        (SetObjective(""), InvalidInput, "the objective must not be empty"),
        (ChangePreference(1, text=""), ValidationError, "at least 1 character"),
    ]
    for edit, error, words in refused:
        with pytest.raises(error, match=words.replace("(", r"\(").replace(")", r"\)")):
            await ws.apply(thread_id, edit)
    assert await ws.read(thread_id) == before
    assert await updated_at(db, thread_id) == stamp

    with pytest.raises(NotFound):
        await ws.apply("th_missing", SetObjective("x"))

    # `apply` hands back the workspace as it stood just before the edit, as far as
    # the edit reads it (here the preferences).
    returned = await ws.apply(thread_id, ChangePreference(1, remove=True))
    assert returned.preferences == before.preferences and returned.preferences
    assert (returned.objective, returned.turn_index) == (before.objective, before.turn_index)
    assert (await ws.read(thread_id)).preferences == ()
    returned = await ws.apply(thread_id, ChangeTodo(1, toggle=True))
    assert [t.done for t in returned.todos] == [False]
    assert [t.done for t in (await ws.read(thread_id)).todos] == [True]


async def test_agent_workspace_reads_only_what_an_edit_is_checked_against(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An edit reads the lists `reads(edit)` names; never the document or artifacts
    (a tool call on a conversation with a large document does not load it)."""
    user = await users.ensure_local(db, name="port-test")
    thread_id = (await conversations.create(db, principal=user, title="port")).thread_id
    ws = AgentWorkspace(db)
    for edit in (SetDocument(content="x" * 50_000), AddPreference("p"), AddTodo("t")):
        await ws.apply(thread_id, edit)
    loaded: list[str] = []
    for module, name in (
        (workspace_repo, "get_document"),
        (workspace_repo, "list_artifacts"),
        (live_repo, "live_rows"),
    ):
        real = getattr(module, name)

        async def spy(*a: Any, _name: str = name, _real: Any = real, **kw: Any) -> Any:
            loaded.append(_name)
            return await _real(*a, **kw)

        monkeypatch.setattr(module, name, spy)
    plain = await ws.apply(thread_id, AddTodo("second"))
    assert plain.preferences == () and plain.todos == () and plain.turn_index == 0
    nested = await ws.apply(thread_id, AddTodo("under", nest_under_last=True))
    assert [t.text for t in nested.todos] == ["t", "second"] and nested.preferences == ()
    pref = await ws.apply(thread_id, ChangePreference(1, locked=True))
    assert [p.text for p in pref.preferences] == ["p"] and pref.todos == ()
    assert loaded == []
    live = await ws.read(thread_id)
    assert [t.depth for t in live.todos] == [0, 0, 1] and live.preferences[0].locked


class _Inner:
    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    async def read(self, thread_id: str) -> WorkspaceView:
        self.calls.append(("read", thread_id))
        return WorkspaceView(objective="live", document=None)

    async def apply(self, thread_id: str, edit: WorkspaceEdit) -> WorkspaceView:
        self.calls.append(("apply", thread_id))
        return WorkspaceView(objective="live", document=None)


async def test_starting_from_serves_its_view_once_and_never_after_an_edit() -> None:
    held = WorkspaceView(objective="held", document=DocumentView("t", "body"))
    inner = _Inner()
    ws = StartingFrom(inner, "th_a", held)
    assert (await ws.read("th_b")).objective == "live"  # another thread: not the view
    assert (await ws.read("th_a")).objective == "live"  # used up by the first read
    ws = StartingFrom(inner, "th_a", held)
    assert await ws.read("th_a") is held
    assert (await ws.read("th_a")).objective == "live"
    ws = StartingFrom(inner, "th_a", held)
    await ws.apply("th_a", SetObjective("new"))
    assert (await ws.read("th_a")).objective == "live"
    await ws.apply("th_a", AddTodo("x"))
    assert inner.calls == [
        ("read", "th_b"),
        ("read", "th_a"),
        ("read", "th_a"),
        ("apply", "th_a"),
        ("read", "th_a"),
        ("apply", "th_a"),
    ]
