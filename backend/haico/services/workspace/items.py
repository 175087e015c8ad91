"""Live edits of a thread's preferences and todos, one path for every editor.

Each `*_in` function edits the live rows inside the caller's transaction and records
the edit (`live_edit.changed`). Adding an item, the agent's most frequent edit, goes
through `add_item`, which on PostgreSQL needs no transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import moved
from haico.db.engine import Database, fault, limits_of
from haico.db.faults import Window
from haico.db.models import Conversation, Preference, RejectedItem, Todo
from haico.db.repositories import items as repo
from haico.db.repositories import threads as threads_repo
from haico.errors import InvalidInput, NotFound
from haico.schemas.workspace import PreferencePatch, TodoPatch
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import add_root_if_missing, check_for, get_for
from haico.services.workspace.live_edit import changed
from haico.services.workspace.state import new_uid


def _item(row: Preference | Todo) -> dict[str, Any]:
    out: dict[str, Any] = {"id": row.id, "uid": row.uid, "text": row.text}
    if isinstance(row, Preference):
        out["locked"] = row.locked
    else:
        out.update(done=row.done, depth=row.depth)
    out["position"] = row.position
    return out


def _surface(model: type[Preference] | type[Todo]) -> str:
    return "preferences" if model is Preference else "todos"


def _move(items: Sequence[Any], item: Any, position: int) -> None:
    ordered = [i for i in items if i is not item]
    position = max(0, min(position, len(ordered)))
    ordered.insert(position, item)
    for i, it in enumerate(ordered):
        it.position = i


def _renumber(items: Sequence[Any]) -> None:
    for i, it in enumerate(items):
        it.position = i


async def _append(
    session: AsyncSession, model: type[Preference] | type[Todo], values: dict[str, Any]
) -> dict[str, int]:
    """Add an item at the end of its list in one statement that also counts the list
    (the list itself is not read): the new row's id and position. Refused, with
    nothing written, when the list is full."""
    cap = limits_of(session).items
    added = await repo.append_item(session, model, values, cap=cap)
    if added is None:
        raise _full(model, cap)
    return {"id": added[0], "position": added[1]}


def _full(model: type[Preference] | type[Todo], cap: int) -> InvalidInput:
    return InvalidInput(f"{_surface(model)}: a thread holds at most {cap}; remove one first")


async def add_item(
    db: Database,
    thread_id: str,
    model: type[Preference] | type[Todo],
    fields: dict[str, Any],
    *,
    principal: Principal | None,
    create: bool = False,
) -> tuple[Conversation, Preference | Todo]:
    """Add a preference or todo (`fields`: its text and flags) at the end of its list:
    the thread as read and the new item. `principal` is checked by the access rule (REST);
    None where the caller checked it (the agent's turn). `create` (REST): a missing
    thread is created with the item, in its transaction (`add_root_if_missing`).

    On PostgreSQL in two round trips (`_add_unlocked`); in a transaction on SQLite, and
    when another edit of the thread came between that read and its write, or it may
    create the thread."""
    if db.dialect.is_postgres and not create:
        added = await _add_unlocked(db, thread_id, model, fields, principal=principal)
        if added is not None:
            return added
    async with db.transaction() as s:
        if create and principal is not None:
            await add_root_if_missing(s, principal, thread_id=thread_id)
        if principal is None:
            conv = await threads_repo.get_thread(s, thread_id)
            if conv is None:
                raise NotFound(f"conversation {thread_id} not found")
        else:
            conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        if model is Preference:
            return conv, await add_preference_in(s, conv, **fields)
        return conv, await add_todo_in(s, conv, **fields)


async def _add_unlocked(
    db: Database,
    thread_id: str,
    model: type[Preference] | type[Todo],
    fields: dict[str, Any],
    *,
    principal: Principal | None,
) -> tuple[Conversation, Preference | Todo] | None:
    """`add_item` on PostgreSQL: a read without a lock (`repo.read_for_append`: the
    thread, its branch row, its row's version, the list's length, a new id), then the
    item, the thread's stamp and the log entry in one statement, guarded on the thread
    row still being the version read. Every live edit writes that row, so the length
    read is still the length. None, with nothing written, when another edit came in
    between."""
    async with db.one_statement() as s:
        found = await repo.read_for_append(s, model, thread_id)
        if found is None:
            raise NotFound(f"conversation {thread_id} not found")
        conv, branch, version, count, new_id = found
        if principal is not None:
            await check_for(s, principal, conv, branch, need=Role.EDITOR)
        cap = limits_of(s).items
        if count >= cap:
            raise _full(model, cap)
        item = model(id=new_id, uid=new_uid(), thread_id=thread_id, position=count, **fields)
        await fault(s, Window.APPEND_READ)
        try:
            await changed(
                s,
                conv,
                _surface(model),
                "added",
                _item(item),
                writes=[repo.item_write(item)],
                version=version,
            )
        except DBAPIError as exc:
            if isinstance(exc, IntegrityError) or not moved(exc):
                raise
            return None
        return conv, item


async def add_preference_in(
    session: AsyncSession, conv: Conversation, *, text: str, locked: bool = False
) -> Preference:
    values = {"uid": new_uid(), "thread_id": conv.thread_id, "text": text, "locked": locked}
    pref = Preference(**values, **await _append(session, Preference, values))
    await changed(session, conv, "preferences", "added", _item(pref))
    return pref


async def _owned_item(
    session: AsyncSession, model: type[Preference] | type[Todo], conv: Conversation, item_id: int
) -> Preference | Todo:
    item = cast(Preference | Todo | None, await session.get(model, item_id))
    if item is None or item.thread_id != conv.thread_id:
        raise NotFound(f"{model.__tablename__[:-1]} {item_id} not found")
    return item


async def _list_items(
    session: AsyncSession, model: type[Preference] | type[Todo], thread_id: str
) -> Sequence[Preference | Todo]:
    if model is Preference:
        return await repo.list_preferences(session, thread_id)
    return await repo.list_todos(session, thread_id)


async def _update_item_in(
    session: AsyncSession,
    conv: Conversation,
    model: type[Preference] | type[Todo],
    item_id: int,
    patch: PreferencePatch | TodoPatch,
) -> Preference | Todo:
    """Apply the fields a PATCH sets (null leaves a field as it is); position reorders."""
    item = await _owned_item(session, model, conv, item_id)
    for name in sorted(patch.model_fields_set - {"position"}):
        value = getattr(patch, name)
        if value is not None:
            setattr(item, name, value)
    if patch.position is not None:
        _move(await _list_items(session, model, conv.thread_id), item, patch.position)
    await session.flush()
    await changed(session, conv, _surface(model), "updated", _item(item))
    return item


async def _delete_item_in(
    session: AsyncSession, conv: Conversation, model: type[Preference] | type[Todo], item_id: int
) -> None:
    """Delete a live item and keep it as a rejected decision (the decision map), stamped
    with the thread's turn clock: as-of reads from that turn on list it."""
    item = await _owned_item(session, model, conv, item_id)
    gone = {"id": item.id, "uid": item.uid}
    session.add(
        RejectedItem(
            thread_id=conv.thread_id,
            uid=item.uid,
            surface="preference" if model is Preference else "todo",
            text=item.text,
            rejected_after_turn=conv.turn_index,
        )
    )
    await session.delete(item)
    await session.flush()
    _renumber(await _list_items(session, model, conv.thread_id))
    await changed(session, conv, _surface(model), "removed", gone)


async def update_preference_in(
    session: AsyncSession, conv: Conversation, pref_id: int, patch: PreferencePatch
) -> Preference:
    pref = await _update_item_in(session, conv, Preference, pref_id, patch)
    assert isinstance(pref, Preference)
    return pref


async def delete_preference_in(session: AsyncSession, conv: Conversation, pref_id: int) -> None:
    await _delete_item_in(session, conv, Preference, pref_id)


async def add_todo_in(
    session: AsyncSession, conv: Conversation, *, text: str, done: bool = False, depth: int = 0
) -> Todo:
    values = {
        "uid": new_uid(),
        "thread_id": conv.thread_id,
        "text": text,
        "done": done,
        "depth": depth,
    }
    todo = Todo(**values, **await _append(session, Todo, values))
    await changed(session, conv, "todos", "added", _item(todo))
    return todo


async def update_todo_in(
    session: AsyncSession, conv: Conversation, todo_id: int, patch: TodoPatch
) -> Todo:
    todo = await _update_item_in(session, conv, Todo, todo_id, patch)
    assert isinstance(todo, Todo)
    return todo


async def delete_todo_in(session: AsyncSession, conv: Conversation, todo_id: int) -> None:
    await _delete_item_in(session, conv, Todo, todo_id)
