"""The live workspace tables: documents and stored bodies, preferences, todos, artifacts.

Queries and writes only; services own the rules and the transaction boundaries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, bindparam, delete, func, insert, literal, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.base import table_of
from app.db.dialect import POSTGRES, SQLITE, Write, dialect_of
from app.db.models import Artifact, Document, DocumentBody, Preference, RejectedItem, Todo


async def get_document(s: AsyncSession, thread_id: str) -> Document | None:
    stmt = select(Document).where(Document.thread_id == thread_id)
    return (await s.execute(stmt)).scalar_one_or_none()


# The live workspace of a thread as plain rows (no ORM objects), each read built once:
# the start of every turn reads all five.
_LIVE_DOCUMENT = (
    select(
        Document.title,
        Document.body_hash,
        func.coalesce(DocumentBody.content, Document.content).label("content"),
    )
    .outerjoin(DocumentBody, DocumentBody.hash == Document.body_hash)
    .where(Document.thread_id == bindparam("thread"))
)
_LIVE_PREFERENCES = (
    select(Preference.id, Preference.uid, Preference.text, Preference.locked)
    .where(Preference.thread_id == bindparam("thread"))
    .order_by(Preference.position, Preference.id)
)
_LIVE_TODOS = (
    select(Todo.id, Todo.uid, Todo.text, Todo.done, Todo.depth)
    .where(Todo.thread_id == bindparam("thread"))
    .order_by(Todo.position, Todo.id)
)
_LIVE_ARTIFACTS = (
    select(Artifact.id, Artifact.turn_index, Artifact.kind, Artifact.title)
    .where(Artifact.thread_id == bindparam("thread"))
    .order_by(Artifact.id)
)
_LIVE_REJECTED = (
    select(
        RejectedItem.uid, RejectedItem.surface, RejectedItem.text, RejectedItem.rejected_after_turn
    )
    .where(RejectedItem.thread_id == bindparam("thread"))
    .order_by(RejectedItem.id)
)


@dataclass
class LiveRows:
    """A thread's live workspace rows: the document (title, body_hash, content: its
    own text or the stored version's), preferences and todos in order, artifacts and
    rejected decisions."""

    document: Row[str, str | None, str] | None
    preferences: Sequence[Row[int, str, str, bool]]
    todos: Sequence[Row[int, str, str, bool, int]]
    artifacts: Sequence[Row[int, int, str, str]]
    rejected: Sequence[Row[str, str, str, int]]


async def live_rows(s: AsyncSession, thread_id: str) -> LiveRows:
    p = {"thread": thread_id}
    return LiveRows(
        document=(await s.execute(_LIVE_DOCUMENT, p)).first(),
        preferences=(await s.execute(_LIVE_PREFERENCES, p)).all(),
        todos=(await s.execute(_LIVE_TODOS, p)).all(),
        artifacts=(await s.execute(_LIVE_ARTIFACTS, p)).all(),
        rejected=(await s.execute(_LIVE_REJECTED, p)).all(),
    )


async def ensure_document(s: AsyncSession, thread_id: str) -> Document:
    """The thread's document row, created empty when it has none.

    Two first writes at once both find no row: the insert does nothing on the second
    (it waits for the first to commit on PostgreSQL), which then reads the row the
    first wrote, instead of failing on the unique thread id."""
    doc = await get_document(s, thread_id)
    if doc is None:
        insert_new = dialect_of(s).insert(Document)
        await s.execute(
            insert_new.values(thread_id=thread_id, title="", content="").on_conflict_do_nothing(
                index_elements=["thread_id"]
            )
        )
        doc = await get_document(s, thread_id)
        assert doc is not None
    return doc


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


async def list_rejected(s: AsyncSession, thread_id: str) -> Sequence[RejectedItem]:
    stmt = select(RejectedItem).where(RejectedItem.thread_id == thread_id)
    return (await s.execute(stmt.order_by(RejectedItem.id))).scalars().all()


async def insert_rejected(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await s.execute(insert(RejectedItem), rows)


async def list_artifacts(
    s: AsyncSession, thread_id: str, *, max_turn: int | None = None
) -> Sequence[Artifact]:
    stmt = select(Artifact).where(Artifact.thread_id == thread_id)
    if max_turn is not None:
        stmt = stmt.where(Artifact.turn_index <= max_turn)
    return (await s.execute(stmt.order_by(Artifact.id))).scalars().all()


async def get_artifact(s: AsyncSession, artifact_id: int) -> Artifact | None:
    return await s.get(Artifact, artifact_id)


async def live_document_text(s: AsyncSession, thread_id: str) -> str | None:
    """The text of the thread's live document (its own or the stored version it points
    at), None if it has none; one query."""
    row = (
        await s.execute(
            select(func.coalesce(DocumentBody.content, Document.content))
            .select_from(Document)
            .outerjoin(DocumentBody, DocumentBody.hash == Document.body_hash)
            .where(Document.thread_id == thread_id)
        )
    ).first()
    return None if row is None else str(row[0])


async def get_body(s: AsyncSession, digest: str) -> str | None:
    row = await s.get(DocumentBody, digest)
    return row.content if row else None


async def store_body(s: AsyncSession, content: str) -> str:
    """Write a document body once, content-addressed; returns its hash."""
    stmt, params = body_write(s, content)
    await s.execute(stmt, params)
    return str(params["b_hash"])


_BODY_INSERTS = {
    postgres: dialect.insert(table_of(DocumentBody))
    .values(hash=bindparam("b_hash"), content=bindparam("b_content"))
    .on_conflict_do_nothing(index_elements=["hash"])
    for postgres, dialect in ((True, POSTGRES), (False, SQLITE))
}


def body_write(s: AsyncSession, content: str) -> Write:
    """The write that stores a document body once, content-addressed; its hash is the
    `b_hash` parameter."""
    digest = hashlib.sha256(content.encode()).hexdigest()
    return _BODY_INSERTS[dialect_of(s).is_postgres], {"b_hash": digest, "b_content": content}


async def copy_live_rows(s: AsyncSession, *, source: str, target: str) -> None:
    """Copy one thread's document, preferences, todos and rejected decisions into an
    empty thread, in SQL."""
    await s.execute(
        insert(Document).from_select(
            ["thread_id", "title", "content", "body_hash"],
            select(literal(target), Document.title, Document.content, Document.body_hash).where(
                Document.thread_id == source
            ),
        )
    )
    await s.execute(
        insert(Preference).from_select(
            ["uid", "thread_id", "text", "locked", "position"],
            select(
                Preference.uid,
                literal(target),
                Preference.text,
                Preference.locked,
                Preference.position,
            ).where(Preference.thread_id == source),
        )
    )
    await s.execute(
        insert(Todo).from_select(
            ["uid", "thread_id", "text", "done", "depth", "position"],
            select(
                Todo.uid, literal(target), Todo.text, Todo.done, Todo.depth, Todo.position
            ).where(Todo.thread_id == source),
        )
    )
    await s.execute(
        insert(RejectedItem).from_select(
            ["thread_id", "uid", "surface", "text", "rejected_after_turn"],
            select(
                literal(target),
                RejectedItem.uid,
                RejectedItem.surface,
                RejectedItem.text,
                RejectedItem.rejected_after_turn,
            )
            .where(RejectedItem.thread_id == source)
            .order_by(RejectedItem.id),
        )
    )


async def copy_artifacts(
    s: AsyncSession,
    target: str,
    *,
    source: str | None = None,
    up_to: int | None = None,
    ids: list[int] | None = None,
) -> None:
    """Copy artifacts into `target`, in order: those `source` made up to turn `up_to`,
    or the rows `ids`."""
    if source is None and not ids:
        return
    where = (
        [Artifact.id.in_(ids or [])]
        if source is None
        else [Artifact.thread_id == source, Artifact.turn_index <= (up_to or 0)]
    )
    await s.execute(
        insert(Artifact).from_select(
            ["thread_id", "turn_index", "kind", "title", "content", "created_at"],
            select(
                literal(target),
                Artifact.turn_index,
                Artifact.kind,
                Artifact.title,
                Artifact.content,
                Artifact.created_at,
            )
            .where(*where)
            .order_by(Artifact.id),
        )
    )


async def clear_items(s: AsyncSession, thread_id: str) -> None:
    """Drop a thread's preferences, todos and rejected decisions (to rewrite them)."""
    for model in (Preference, Todo, RejectedItem):
        await s.execute(delete(model).where(model.thread_id == thread_id))


async def insert_preferences(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await s.execute(insert(Preference), rows)


async def insert_todos(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    if rows:
        await s.execute(insert(Todo), rows)
