"""Preferences and todos: list them, add one at the end (counted in the same
statement, or with the id and position chosen from an unlocked read), and write whole
lists. Queries and writes only; `services.workspace.items` owns the rules."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import table_of
from haico.db.dialect import Write
from haico.db.models import Conversation, ConversationBranch, Preference, RejectedItem, Todo
from haico.db.repositories.threads import ROW_VERSION


async def list_preferences(s: AsyncSession, thread_id: str) -> Sequence[Preference]:
    stmt = (
        select(Preference)
        .where(Preference.thread_id == thread_id)
        .order_by(Preference.position, Preference.id)
    )
    return (await s.execute(stmt)).scalars().all()


async def list_todos(s: AsyncSession, thread_id: str) -> Sequence[Todo]:
    stmt = select(Todo).where(Todo.thread_id == thread_id).order_by(Todo.position, Todo.id)
    return (await s.execute(stmt)).scalars().all()


def _append_statement(model: type[Preference] | type[Todo], columns: tuple[str, ...]) -> Any:
    t = table_of(model)
    held = (
        select(func.count().label("n"))
        .select_from(t)
        .where(t.c.thread_id == bindparam("thread_id"))
        .subquery()
    )
    values = [bindparam(name, type_=t.c[name].type) for name in columns]
    return (
        insert(t)
        .from_select(
            [*columns, "position"], select(*values, held.c.n).where(held.c.n < bindparam("cap"))
        )
        .returning(t.c.id, t.c.position)
    )


_APPENDS = {
    Preference: _append_statement(Preference, ("uid", "thread_id", "text", "locked")),
    Todo: _append_statement(Todo, ("uid", "thread_id", "text", "done", "depth")),
}


async def append_item(
    s: AsyncSession, model: type[Preference] | type[Todo], values: dict[str, Any], *, cap: int
) -> tuple[int, int] | None:
    """Insert a preference or todo (`values`: every column but id and position) at the
    end of its thread's list, counting the list in the same statement: its id and
    position, or None, writing nothing, when the list already holds `cap` items."""
    row = (await s.execute(_APPENDS[model], {**values, "cap": cap})).first()
    return None if row is None else (row.id, row.position)


def _for_append(model: type[Preference] | type[Todo]) -> Any:
    t = table_of(model)
    held = (
        select(func.count())
        .select_from(t)
        .where(t.c.thread_id == Conversation.thread_id)
        .correlate(Conversation)
        .scalar_subquery()
    )
    next_id = func.nextval(func.pg_get_serial_sequence(literal(t.name), literal("id")))
    return (
        select(Conversation, ConversationBranch, ROW_VERSION, held, next_id)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .where(Conversation.thread_id == bindparam("thread_id"))
    )


_FOR_APPEND = {Preference: _for_append(Preference), Todo: _for_append(Todo)}


async def read_for_append(
    s: AsyncSession, model: type[Preference] | type[Todo], thread_id: str
) -> tuple[Conversation, ConversationBranch | None, int, int, int] | None:
    """PostgreSQL, without a lock, in one statement: the thread, its branch row, its
    row's version, how many `model` items it holds, and an id for one more (taken from
    the table's sequence, and skipped if the item is not written). None: no such
    thread."""
    row = (await s.execute(_FOR_APPEND[model], {"thread_id": thread_id})).first()
    return None if row is None else (row[0], row[1], row[2], row[3], row[4])


def _item_insert(model: type[Preference] | type[Todo], columns: tuple[str, ...]) -> Any:
    return insert(table_of(model)).values({name: bindparam(f"ii_{name}") for name in columns})


_ITEM_INSERTS = {
    Preference: _item_insert(Preference, ("id", "uid", "thread_id", "text", "locked", "position")),
    Todo: _item_insert(Todo, ("id", "uid", "thread_id", "text", "done", "depth", "position")),
}


def item_write(item: Preference | Todo) -> Write:
    """The INSERT of a preference or todo whose id and position are chosen already
    (`read_for_append`), as a write for the log's statement."""
    model = type(item)
    columns = table_of(model).c.keys()
    return _ITEM_INSERTS[model], {f"ii_{name}": getattr(item, name) for name in columns}


async def clear_items(s: AsyncSession, thread_id: str) -> None:
    """Drop a thread's preferences, todos and rejected decisions (to rewrite them)."""
    for model in (Preference, Todo, RejectedItem):
        await s.execute(delete(model).where(model.thread_id == thread_id))


# Core INSERTs on the tables: the ORM's bulk path costs more per call, and nothing
# here needs it (ids come from the database, the rows are not loaded back).
_BULK_INSERTS = {model: insert(table_of(model)) for model in (Preference, Todo)}


async def insert_preferences(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await s.execute(_BULK_INSERTS[Preference], rows)


async def insert_todos(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await s.execute(_BULK_INSERTS[Todo], rows)
