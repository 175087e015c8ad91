"""Live workspace edits, one path for every editor: the REST face and the agent's tools.

Each `*_in` function edits one thread's live rows inside the caller's transaction and
marks a draft dirty; the REST functions below check ownership and open that
transaction. Adding a preference or todo, the agent's most frequent edit, goes
through `add_item`, which on PostgreSQL needs no transaction. Reads as of a turn go
through `services.snapshots`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.dialect import Write, moved
from app.db.engine import Database, fault, limits_of
from app.db.models import Artifact, Conversation, Preference, RejectedItem, Todo
from app.db.repositories import threads as threads_repo
from app.db.repositories import workspace as repo
from app.errors import InvalidInput, NotFound
from app.events import actions
from app.events import log as action_log
from app.schemas import (
    ArtifactOut,
    PreferenceOut,
    PreferencePatch,
    TodoOut,
    TodoPatch,
    WorkspaceOut,
)
from app.services.conversations import check_owned, get_owned
from app.services.family import Lineage
from app.services.snapshots import (
    PreferenceState,
    TodoState,
    WorkspaceState,
    document_body,
    live_state,
    new_uid,
    resolve_restore_state,
)

__all__ = [
    "PreferenceState",
    "TodoState",
    "WorkspaceState",
    "add_item",
    "add_preference_in",
    "add_todo_in",
    "create_artifact_in",
    "delete_preference_in",
    "delete_todo_in",
    "live_state",
    "set_objective_in",
    "update_preference_in",
    "update_todo_in",
    "write_document_in",
]


async def changed(
    s: AsyncSession,
    conv: Conversation,
    surface: str,
    change: str,
    item: dict[str, Any] | None = None,
    *,
    writes: Sequence[Write] = (),
    version: int | None = None,
) -> None:
    """Record a live edit: the thread was active now, a draft becomes dirty, and the
    change is logged as `haico/workspaceChanged` for every follower of the family.
    `writes` go in the same statement (PostgreSQL); with `version`, the thread row must
    still be that version (read without a lock) or nothing is written (`moved`)."""
    stamp = (
        threads_repo.edited(conv)
        if version is None
        else threads_repo.edited_if_unchanged(conv, version)
    )
    await action_log.append_chat(
        s,
        conv.root_thread_id,
        actions.workspace_changed(conv.thread_id, surface, change, item),
        after=[*writes, *stamp],
    )


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


async def set_objective_in(session: AsyncSession, conv: Conversation, text: str | None) -> None:
    if text is not None and len(text) > limits_of(session).message_chars:
        raise InvalidInput(f"objective: at most {limits_of(session).message_chars} characters")
    conv.objective = text.strip() if text and text.strip() else None
    await changed(session, conv, "objective", "set", {"text": conv.objective})


async def write_document_in(
    session: AsyncSession,
    conv: Conversation,
    *,
    content: str | None = None,
    append: str | None = None,
    title: str | None = None,
) -> None:
    doc = await repo.ensure_document(session, conv.thread_id)
    if title is not None:
        doc.title = title
    if content is not None or append is not None:
        body = content if content is not None else await document_body(session, doc)
        if append is not None:
            body = f"{body.rstrip()}\n\n{append}" if body.strip() else append
        cap = limits_of(session).document_chars
        if len(body) > cap:
            raise InvalidInput(f"document: at most {cap} characters (this one has {len(body)})")
        doc.content = body
        doc.body_hash = None
    item = {"title": doc.title, "content": await document_body(session, doc)}
    await changed(session, conv, "document", "set", item)


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
    user_id: int | None,
) -> tuple[Conversation, Preference | Todo]:
    """Add a preference or todo (`fields`: its text and flags) at the end of its list:
    the thread as read and the new item. `user_id` is checked as the owner (REST);
    None where the caller checked it (the agent's turn).

    On PostgreSQL in two round trips (`_add_unlocked`); in a transaction on SQLite, and
    when another edit of the thread came between that read and its write."""
    if db.dialect.is_postgres:
        added = await _add_unlocked(db, thread_id, model, fields, user_id=user_id)
        if added is not None:
            return added
    async with db.transaction() as s:
        if user_id is None:
            conv = await threads_repo.get_thread(s, thread_id)
            if conv is None:
                raise NotFound(f"conversation {thread_id} not found")
        else:
            conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        if model is Preference:
            return conv, await add_preference_in(s, conv, **fields)
        return conv, await add_todo_in(s, conv, **fields)


async def _add_unlocked(
    db: Database,
    thread_id: str,
    model: type[Preference] | type[Todo],
    fields: dict[str, Any],
    *,
    user_id: int | None,
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
        if user_id is not None:
            check_owned(conv, branch, user_id=user_id)
        cap = limits_of(s).items
        if count >= cap:
            raise _full(model, cap)
        item = model(id=new_id, uid=new_uid(), thread_id=thread_id, position=count, **fields)
        await fault(s, "append-read")
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


async def create_artifact_in(
    session: AsyncSession, conv: Conversation, *, title: str, content: str, kind: str = "text"
) -> Artifact:
    art = Artifact(
        thread_id=conv.thread_id,
        turn_index=conv.turn_index,
        kind=kind,
        title=title,
        content=content,
    )
    session.add(art)
    await session.flush()
    summary = {"id": art.id, "turn_index": art.turn_index, "kind": art.kind, "title": art.title}
    await changed(session, conv, "artifacts", "added", summary)
    return art


# ---- the REST face: ownership first, one transaction each ----


async def get_workspace(
    db: Database, *, user_id: int, thread_id: str, as_of_turn: int | None = None
) -> WorkspaceOut:
    async with db.read() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        if as_of_turn is None:
            return (await live_state(s, conv)).to_out()
        return (await resolve_restore_state(s, conv, as_of_turn)).to_out()


async def set_objective(
    db: Database, *, user_id: int, thread_id: str, text: str | None
) -> WorkspaceOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await set_objective_in(s, conv, text)
        await s.flush()
        return (await live_state(s, conv)).to_out()


async def put_document(
    db: Database, *, user_id: int, thread_id: str, content: str, title: str | None
) -> WorkspaceOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await write_document_in(s, conv, content=content, title=title)
        await s.flush()
        return (await live_state(s, conv)).to_out()


def _pref_out(p: Preference) -> PreferenceOut:
    return PreferenceOut(id=p.id, uid=p.uid, text=p.text, locked=p.locked, position=p.position)


def _todo_out(t: Todo) -> TodoOut:
    return TodoOut(id=t.id, uid=t.uid, text=t.text, done=t.done, depth=t.depth, position=t.position)


async def add_preference(
    db: Database, *, user_id: int, thread_id: str, text: str, locked: bool
) -> PreferenceOut:
    _, pref = await add_item(
        db, thread_id, Preference, {"text": text, "locked": locked}, user_id=user_id
    )
    assert isinstance(pref, Preference)
    return _pref_out(pref)


async def update_preference(
    db: Database, *, user_id: int, thread_id: str, pref_id: int, patch: PreferencePatch
) -> PreferenceOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        return _pref_out(await update_preference_in(s, conv, pref_id, patch))


async def delete_preference(db: Database, *, user_id: int, thread_id: str, pref_id: int) -> None:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await delete_preference_in(s, conv, pref_id)


async def add_todo(
    db: Database, *, user_id: int, thread_id: str, text: str, done: bool, depth: int
) -> TodoOut:
    fields = {"text": text, "done": done, "depth": depth}
    _, todo = await add_item(db, thread_id, Todo, fields, user_id=user_id)
    assert isinstance(todo, Todo)
    return _todo_out(todo)


async def update_todo(
    db: Database, *, user_id: int, thread_id: str, todo_id: int, patch: TodoPatch
) -> TodoOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        return _todo_out(await update_todo_in(s, conv, todo_id, patch))


async def delete_todo(db: Database, *, user_id: int, thread_id: str, todo_id: int) -> None:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await delete_todo_in(s, conv, todo_id)


async def get_artifact(
    db: Database, *, user_id: int, thread_id: str, artifact_id: int
) -> ArtifactOut:
    async with db.read() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        art = await repo.get_artifact(s, artifact_id)
        # An as-of view may list an ancestor's artifact, so any thread of the lineage counts.
        if art is None or art.thread_id not in (await Lineage.load(s, conv.thread_id)).thread_ids:
            raise NotFound(f"artifact {artifact_id} not found")
        return ArtifactOut(
            id=art.id,
            turn_index=art.turn_index,
            kind=art.kind,
            title=art.title,
            content=art.content,
        )
