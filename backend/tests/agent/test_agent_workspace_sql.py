"""The agent's workspace port on the database, in as few round trips as it can.

On PostgreSQL an added preference or todo (`services.items.add_item`) is a
read without a lock and one guarded statement: the item, the thread's stamp and the
log entry. The guard is "the thread row is still the version read"; every live edit
writes that row, so an edit committed in between makes the add run again the locked
way, at the right position. The tests change the list between the read and the write
(at the `append-read` fault step) and check the list a user then sees. The agent's
read of the workspace is one statement there too."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from haico.agent.port import AddPreference, AddTodo
from haico.db.engine import Database
from haico.db.faults import Window
from haico.db.models import Conversation
from haico.events import log as action_log
from haico.services.access import users
from haico.services.families import conversations
from haico.services.turns.agent_port import AgentWorkspace
from haico.services.workspace import edits as workspace_service
from tests.agent.conftest import updated_at
from tests.helpers import as_user, recorded_sql


async def _thread(db: Database) -> tuple[int, str]:
    user = await users.ensure_local(db, name="adds")
    return user.id, (await conversations.create(db, principal=user, title="adds")).thread_id


async def _logged_items(db: Database, thread_id: str) -> list[dict[str, Any]]:
    """The items of the thread's `added` workspace changes."""
    async with db.read() as s:
        conv = await s.get(Conversation, thread_id)
        assert conv is not None
        entries = await action_log.read_before(s, before=None, root_thread_id=conv.root_thread_id)
    return [
        e.action["item"]
        for e in entries
        if e.action.get("type") == "haico/workspaceChanged" and e.action["change"] == "added"
    ]


async def test_an_added_item_lands_at_the_end_and_is_logged_as_stored(db: Database) -> None:
    user_id, tid = await _thread(db)
    ws = AgentWorkspace(db)
    stamp = await updated_at(db, tid)
    before = await ws.apply(tid, AddPreference("plain words", locked=True))
    assert (before.objective, before.turn_index, before.preferences) == (None, 0, ())
    assert await updated_at(db, tid) > stamp  # the thread was active now
    await ws.apply(tid, AddTodo("outline"))
    await ws.apply(tid, AddTodo("sources", depth=1))
    await ws.apply(tid, AddPreference("short"))
    live = await workspace_service.get_workspace(db, principal=as_user(user_id), thread_id=tid)
    assert [(p.text, p.locked, p.position) for p in live.preferences] == [
        ("plain words", True, 0),
        ("short", False, 1),
    ]
    assert [(t.text, t.depth, t.done, t.position) for t in live.todos] == [
        ("outline", 0, False, 0),
        ("sources", 1, False, 1),
    ]
    # A follower applying the logged changes gets the rows as stored (ids included).
    stored = {(i.id, i.uid, i.text, i.position) for i in (*live.preferences, *live.todos)}
    logged = {(i["id"], i["uid"], i["text"], i["position"]) for i in await _logged_items(db, tid)}
    assert logged == stored


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_on_postgres_an_add_is_one_read_and_one_write(db: Database) -> None:
    _, tid = await _thread(db)
    ws = AgentWorkspace(db)
    await ws.apply(tid, AddTodo("first"))
    with recorded_sql(db) as statements:
        await ws.apply(tid, AddTodo("second"))
    assert len(statements) == 2, statements
    assert statements[0].lstrip().startswith("SELECT") and "nextval" in statements[0]
    assert "INSERT INTO todos" in statements[1] and "INSERT INTO action_log" in statements[1]
    assert [t.text for t in (await ws.read(tid)).todos] == ["first", "second"]


def _once_between(db: Database, act: Callable[[], Awaitable[None]]) -> list[str]:
    """Run `act` the first time an add has read and not yet written; the steps seen."""
    seen: list[str] = []

    async def hook(step: str) -> None:
        seen.append(step)
        if step == Window.APPEND_READ and seen.count(step) == 1:
            await act()

    db.faults = hook
    return seen


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
@pytest.mark.parametrize("meanwhile", ["added", "removed"])
async def test_a_list_changed_between_the_read_and_the_write(db: Database, meanwhile: str) -> None:
    """Another add (or a removal) commits after the agent's add read the list's length:
    the guarded write fails, writing nothing, and the add runs again the locked way. The
    agent's item is last, once, and its logged change gives the position it has."""
    user_id, tid = await _thread(db)
    ws = AgentWorkspace(db)
    for text in ("a", "b"):
        await ws.apply(tid, AddTodo(text))
    first = (await ws.read(tid)).todos[0].id

    async def edit() -> None:
        if meanwhile == "added":
            await workspace_service.add_todo(
                db, principal=as_user(user_id), thread_id=tid, text="by hand", done=False, depth=0
            )
        else:
            await workspace_service.delete_todo(
                db, principal=as_user(user_id), thread_id=tid, todo_id=first
            )

    seen = _once_between(db, edit)
    await ws.apply(tid, AddTodo("agent"))
    # The agent's add read once (then ran the locked way); a REST add reads too.
    assert seen.count(Window.APPEND_READ) == (2 if meanwhile == "added" else 1)
    live = await workspace_service.get_workspace(db, principal=as_user(user_id), thread_id=tid)
    expected = ["a", "b", "by hand", "agent"] if meanwhile == "added" else ["b", "agent"]
    assert [(t.text, t.position) for t in live.todos] == [(x, i) for i, x in enumerate(expected)]
    # Followers place the item where its logged change says: where it is.
    (logged,) = [i for i in await _logged_items(db, tid) if i["text"] == "agent"]
    assert logged["position"] == expected.index("agent") == live.todos[-1].position


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_on_postgres_the_agents_read_is_one_statement(db: Database) -> None:
    """The workspace the agent's prompt is built from (after a tool round) comes back
    with its thread in one statement, every part as the REST face shows it."""
    user_id, tid = await _thread(db)
    ws = AgentWorkspace(db)
    for edit in (AddPreference("plain", locked=True), AddTodo("outline"), AddTodo("x", depth=1)):
        await ws.apply(tid, edit)
    await workspace_service.set_objective(
        db, principal=as_user(user_id), thread_id=tid, text="a report"
    )
    await workspace_service.put_document(
        db,
        principal=as_user(user_id),
        thread_id=tid,
        content="Cities are for people.",
        title="Notes",
    )
    with recorded_sql(db) as statements:
        view = await ws.read(tid)
    assert len(statements) == 1
    rest = await workspace_service.get_workspace(db, principal=as_user(user_id), thread_id=tid)
    assert view.objective == rest.objective == "a report"
    assert view.document is not None and rest.document is not None
    assert (view.document.title, view.document.content) == (
        rest.document.title,
        rest.document.content,
    )
    assert [(p.id, p.text, p.locked) for p in view.preferences] == [
        (p.id, p.text, p.locked) for p in rest.preferences
    ]
    assert [(t.id, t.text, t.depth) for t in view.todos] == [
        (t.id, t.text, t.depth) for t in rest.todos
    ]
