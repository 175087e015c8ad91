"""The live workspace tables: documents and stored bodies, preferences, todos, artifacts.

Queries and writes only; services own the rules and the transaction boundaries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import (
    bindparam,
    func,
    insert,
    literal,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import table_of
from haico.db.dialect import POSTGRES, SQLITE, Write, dialect_of
from haico.db.memo import Memo
from haico.db.models import Artifact, Document, DocumentBody, Preference, RejectedItem, Todo


async def get_document(s: AsyncSession, thread_id: str) -> Document | None:
    stmt = select(Document).where(Document.thread_id == thread_id)
    return (await s.execute(stmt)).scalar_one_or_none()


# The parameter that carries a document row's new text (`document_write`); a search
# entry written in the same statement names it too, so the text is sent once.
DOCUMENT_TEXT = "dw_content"
_DOCUMENT_SETS = {
    keep_body: update(table_of(Document))
    .where(table_of(Document).c.thread_id == bindparam("dw_thread"))
    .values(
        {"title": bindparam("dw_title")}
        if keep_body
        else {
            "title": bindparam("dw_title"),
            "content": bindparam(DOCUMENT_TEXT),
            "body_hash": None,
        }
    )
    for keep_body in (True, False)
}


def document_write(thread_id: str, *, title: str, content: str, keep_body: bool) -> Write:
    """The write (for `execute_all`) that sets the thread's document row, no read: its
    title, and unless `keep_body` its text (inline; a body reference it had is
    dropped)."""
    params = {"dw_thread": thread_id, "dw_title": title}
    if not keep_body:
        params[DOCUMENT_TEXT] = content
    return _DOCUMENT_SETS[keep_body], params


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


async def insert_documents(s: AsyncSession, rows: list[dict[str, Any]]) -> None:
    """New threads' documents (`thread_id`, `title`, `content`), one statement."""
    if rows:
        await s.execute(insert(Document), rows)


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


# Stored bodies by hash (`memo.py`): at most 16 M characters of text.
BODIES: Memo[str] = Memo(16_000_000)


async def get_body(s: AsyncSession, digest: str) -> str | None:
    known = BODIES.get(digest)
    if known is not None:
        return known
    content = await s.scalar(select(DocumentBody.content).where(DocumentBody.hash == digest))
    if content is not None:
        BODIES.put(digest, content, len(content))
    return content


async def store_body(s: AsyncSession, content: str) -> str:
    """Write a document body once, content-addressed; returns its hash."""
    stmt, params = body_write(content, postgres=dialect_of(s).is_postgres)
    await s.execute(stmt, params)
    return str(params["b_hash"])


# By dialect and parameter prefix: a second prefix lets two bodies go in one
# `execute_all`, whose writes share one parameter namespace.
_BODY_INSERTS = {
    (postgres, prefix): dialect.insert(table_of(DocumentBody))
    .values(hash=bindparam(f"{prefix}_hash"), content=bindparam(f"{prefix}_content"))
    .on_conflict_do_nothing(index_elements=["hash"])
    for postgres, dialect in ((True, POSTGRES), (False, SQLITE))
    for prefix in ("b", "b2")
}


def body_digest(content: str) -> str:
    """A document body's address: the SHA-256 of its UTF-8 text, in hex."""
    return hashlib.sha256(content.encode()).hexdigest()


def body_write(
    content: str, *, postgres: bool, prefix: str = "b", digest: str | None = None
) -> Write:
    """The write that stores a document body once, content-addressed; its hash is the
    `{prefix}_hash` parameter (`prefix` "b", or "b2" for a second body)."""
    digest = digest or body_digest(content)
    return _BODY_INSERTS[postgres, prefix], {f"{prefix}_hash": digest, f"{prefix}_content": content}


def body_unless_stored(
    content: str, stored: Memo[bool] | None, *, postgres: bool, prefix: str = "b"
) -> tuple[str, Write | None]:
    """A body's hash, and the write that stores it unless `stored` (the hashes of
    bodies committed already) holds it: a body is never deleted."""
    digest = body_digest(content)
    if stored is not None and stored.get(digest):
        return digest, None
    return digest, body_write(content, postgres=postgres, prefix=prefix, digest=digest)


_BODY_STATEMENTS = {id(st): prefix for (_, prefix), st in _BODY_INSERTS.items()}


def body_digests(writes: Iterable[Write]) -> list[str]:
    """The hashes of the bodies `writes` store (`body_write`'s)."""
    return [
        str(params[f"{_BODY_STATEMENTS[id(st)]}_hash"])
        for st, params in writes
        if id(st) in _BODY_STATEMENTS
    ]


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
            ["thread_id", "turn_index", "uid", "kind", "title", "content", "created_at"],
            select(
                literal(target),
                Artifact.turn_index,
                Artifact.uid,
                Artifact.kind,
                Artifact.title,
                Artifact.content,
                Artifact.created_at,
            )
            .where(*where)
            .order_by(Artifact.id),
        )
    )
