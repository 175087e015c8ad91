"""The live workspace tables: documents and stored bodies, preferences, todos, artifacts.

Queries and writes only; services own the rules and the transaction boundaries.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import (
    JSON,
    BigInteger,
    BindParameter,
    Integer,
    String,
    Text,
    bindparam,
    cast,
    func,
    insert,
    literal,
    literal_column,
    null,
    select,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.base import table_of
from app.db.dialect import POSTGRES, SQLITE, Write, dialect_of
from app.db.driver import of_session
from app.db.memo import Memo
from app.db.models import (
    Artifact,
    Conversation,
    Document,
    DocumentBody,
    Preference,
    RejectedItem,
    Todo,
)


async def get_document(s: AsyncSession, thread_id: str) -> Document | None:
    stmt = select(Document).where(Document.thread_id == thread_id)
    return (await s.execute(stmt)).scalar_one_or_none()


_DOCUMENT_SETS = {
    keep_body: update(table_of(Document))
    .where(table_of(Document).c.thread_id == bindparam("dw_thread"))
    .values(
        {"title": bindparam("dw_title")}
        if keep_body
        else {
            "title": bindparam("dw_title"),
            "content": bindparam("dw_content"),
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
        params["dw_content"] = content
    return _DOCUMENT_SETS[keep_body], params


class LiveDocument(NamedTuple):
    title: str
    body_hash: str | None
    content: str  # its own text, or the stored version's


class LivePreference(NamedTuple):
    id: int
    uid: str
    text: str
    locked: bool


class LiveTodo(NamedTuple):
    id: int
    uid: str
    text: str
    done: bool
    depth: int


class LiveArtifact(NamedTuple):
    id: int
    turn_index: int
    kind: str
    title: str
    uid: str


class LiveRejected(NamedTuple):
    uid: str
    surface: str
    text: str
    rejected_after_turn: int


@dataclass
class LiveRows:
    """A thread's live workspace rows: the document, preferences and todos in order,
    artifacts and rejected decisions."""

    document: LiveDocument | None = None
    preferences: list[LivePreference] = field(default_factory=list)
    todos: list[LiveTodo] = field(default_factory=list)
    artifacts: list[LiveArtifact] = field(default_factory=list)
    rejected: list[LiveRejected] = field(default_factory=list)


def _part(
    n: int,
    *,
    pos: Any = None,
    id: Any = None,
    s1: Any = None,
    s2: Any = None,
    s3: Any = None,
    n1: Any = None,
    n2: Any = None,
) -> list[Any]:
    """One branch of `_LIVE`'s UNION: every branch has the same eight columns (part,
    position, id, three texts, two numbers), NULL where it has nothing to put."""

    def text_or_null(v: Any) -> Any:
        return cast(null(), Text) if v is None else v

    def int_or_null(v: Any) -> Any:
        return cast(null(), Integer) if v is None else cast(v, Integer)

    return [
        literal_column(str(n), Integer).label("part"),
        int_or_null(pos).label("pos"),
        (cast(null(), BigInteger) if id is None else cast(id, BigInteger)).label("id"),
        text_or_null(s1).label("s1"),
        text_or_null(s2).label("s2"),
        text_or_null(s3).label("s3"),
        int_or_null(n1).label("n1"),
        int_or_null(n2).label("n2"),
    ]


_thread: BindParameter[str] = bindparam("thread", type_=String())
# The whole live workspace of a thread in one query, built once: the start of every
# turn reads it, and so does every agent step that follows an edit.
_LIVE_PARTS = union_all(
    select(
        *_part(
            0,
            s1=Document.title,
            s2=Document.body_hash,
            s3=func.coalesce(DocumentBody.content, Document.content),
        )
    )
    .select_from(Document)
    .outerjoin(DocumentBody, DocumentBody.hash == Document.body_hash)
    .where(Document.thread_id == _thread),
    select(
        *_part(
            1,
            pos=Preference.position,
            id=Preference.id,
            s1=Preference.uid,
            s3=Preference.text,
            n1=Preference.locked,
        )
    ).where(Preference.thread_id == _thread),
    select(
        *_part(
            2, pos=Todo.position, id=Todo.id, s1=Todo.uid, s3=Todo.text, n1=Todo.done, n2=Todo.depth
        )
    ).where(Todo.thread_id == _thread),
    select(
        *_part(
            3,
            id=Artifact.id,
            s1=Artifact.kind,
            s2=Artifact.uid,
            s3=Artifact.title,
            n1=Artifact.turn_index,
        )
    ).where(Artifact.thread_id == _thread),
    select(
        *_part(
            4,
            id=RejectedItem.id,
            s1=RejectedItem.uid,
            s2=RejectedItem.surface,
            s3=RejectedItem.text,
            n1=RejectedItem.rejected_after_turn,
        )
    ).where(RejectedItem.thread_id == _thread),
)
_LIVE = _LIVE_PARTS.order_by(literal_column("part"), literal_column("pos"), literal_column("id"))
_COLUMNS = ("part", "pos", "id", "s1", "s2", "s3", "n1", "n2")

# PostgreSQL: the same rows, in the same order, as one JSON array (NULL for none), so
# that a query can read the live workspace beside other rows in one round trip (the
# optimistic open of a turn, `heads.read_with_head`). Its parameter is `thread`.
_lw = _LIVE_PARTS.subquery("lw")
LIVE_JSON = (
    select(
        func.json_agg(
            aggregate_order_by(literal_column("lw"), _lw.c.part, _lw.c.pos, _lw.c.id),
            type_=JSON(none_as_null=True),
        )
    )
    .select_from(_lw)
    .scalar_subquery()
)


_THREAD_LIVE = select(Conversation, LIVE_JSON).where(Conversation.thread_id == bindparam("thread"))


async def thread_with_live_rows(
    s: AsyncSession, thread_id: str
) -> tuple[Conversation, LiveRows] | None:
    """PostgreSQL: the thread and its live workspace, in one statement (None: no such
    thread)."""
    row = (await s.execute(_THREAD_LIVE, {"thread": thread_id})).first()
    return None if row is None else (row[0], live_rows_of(row[1]))


async def live_rows(s: AsyncSession, thread_id: str) -> LiveRows:
    """The thread's live workspace, in one query (on the driver when it can: a few
    hundred rows cost SQLAlchemy more than the database)."""
    driver = await of_session(s, flush=True)
    if driver is not None:
        return _collect(await driver.fetch(_LIVE, {"thread": thread_id}))
    return _collect(await s.execute(_LIVE, {"thread": thread_id}))


def live_rows_of(json_rows: list[dict[str, Any]] | None) -> LiveRows:
    """`LIVE_JSON`'s value as `LiveRows`."""
    return _collect(tuple(r[c] for c in _COLUMNS) for r in json_rows or ())


def _collect(parts: Iterable[Sequence[Any]]) -> LiveRows:
    rows = LiveRows()
    for part, _, id_, s1, s2, s3, n1, n2 in parts:
        if part == 0:
            rows.document = LiveDocument(s1, s2, s3)
        elif part == 1:
            rows.preferences.append(LivePreference(id_, s1, s3, bool(n1)))
        elif part == 2:
            rows.todos.append(LiveTodo(id_, s1, s3, bool(n1), int(n2 or 0)))
        elif part == 3:
            rows.artifacts.append(LiveArtifact(id_, int(n1), s1, s3, s2))
        else:
            rows.rejected.append(LiveRejected(s1, s2, s3, int(n1 or 0)))
    return rows


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


def body_write(content: str, *, postgres: bool, prefix: str = "b") -> Write:
    """The write that stores a document body once, content-addressed; its hash is the
    `{prefix}_hash` parameter (`prefix` "b", or "b2" for a second body)."""
    digest = hashlib.sha256(content.encode()).hexdigest()
    return _BODY_INSERTS[postgres, prefix], {f"{prefix}_hash": digest, f"{prefix}_content": content}


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
