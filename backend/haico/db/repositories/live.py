"""A thread's live workspace read in one query: its document row, preferences, todos,
artifacts (without their content) and rejected decisions, as `LiveRows`.

Queries only. The turn's opening, the agent's steps after an edit, a snapshot's
capture and a merge's sides read them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from sqlalchemy import (
    JSON,
    BigInteger,
    BindParameter,
    CompoundSelect,
    Integer,
    Select,
    String,
    Text,
    bindparam,
    cast,
    func,
    literal_column,
    null,
    select,
    union_all,
)
from sqlalchemy.dialects.postgresql import aggregate_order_by
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.driver import Driver, of_session
from haico.db.models import (
    Artifact,
    Conversation,
    Document,
    DocumentBody,
    Preference,
    RejectedItem,
    Todo,
)


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


def _live_parts(_thread: BindParameter[str]) -> CompoundSelect[Any]:
    """The live workspace of the thread `_thread`, a UNION branch per kind of row."""
    return union_all(
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
                2,
                pos=Todo.position,
                id=Todo.id,
                s1=Todo.uid,
                s3=Todo.text,
                n1=Todo.done,
                n2=Todo.depth,
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


# Built once: the start of every turn reads it, and so does every agent step that
# follows an edit.
_LIVE_PARTS = _live_parts(bindparam("thread", type_=String()))
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


def _two_threads() -> Select[Any]:
    first = _LIVE_PARTS.subquery("first")
    second = _live_parts(bindparam("thread2", type_=String())).subquery("second")
    both = union_all(
        select(literal_column("0", Integer).label("side"), *first.c),
        select(literal_column("1", Integer).label("side"), *second.c),
    ).subquery("both")
    return select(*both.c).order_by(both.c.side, both.c.part, both.c.pos, both.c.id)


_LIVE_TWO = _two_threads()


async def live_rows_of_two(s: AsyncSession, first: str, second: str) -> tuple[LiveRows, LiveRows]:
    """`live_rows` of two threads, in one query."""
    params = {"thread": first, "thread2": second}
    driver = await of_session(s, flush=True)
    rows = await driver.fetch(_LIVE_TWO, params) if driver else await s.execute(_LIVE_TWO, params)
    return _two(rows)


async def live_rows_of_two_on(d: Driver, first: str, second: str) -> tuple[LiveRows, LiveRows]:
    """`live_rows_of_two` on a connection of its own (PostgreSQL: it sees what is
    committed, not a session's uncommitted work)."""
    return _two(await d.fetch(_LIVE_TWO, {"thread": first, "thread2": second}))


def _two(rows: Iterable[Sequence[Any]]) -> tuple[LiveRows, LiveRows]:
    sides: tuple[list[Any], list[Any]] = ([], [])
    for row in rows:
        sides[row[0]].append(tuple(row)[1:])
    return _collect(sides[0]), _collect(sides[1])


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
