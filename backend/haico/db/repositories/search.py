"""The search index: write a node's texts, find a user's nodes by text.

PostgreSQL matches `websearch_to_tsquery` against the stored `tsv` (GIN index) and
ranks with `ts_rank`; SQLite, which has no full-text search in every build, requires
every word of the query as a case-insensitive substring (`instr` on lowered text).
Either way these are candidates: the service keeps those that hold every term as
whole words (`services.search.query`), so both databases answer alike.
Every value is a bound parameter. Only visible threads count: not deleted, not a
fork still being built, not a pending branch or a draft (which own no turns anyway),
and only turns the thread still owns.

One piece on purpose: the index's writes and its queries share one row layout and one
per-dialect matching rule; either half read alone would need the other open beside it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Integer,
    String,
    Text,
    and_,
    bindparam,
    case,
    delete,
    func,
    insert,
    literal,
    literal_column,
    or_,
    select,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import table_of
from haico.db.dialect import Write, dialect_of
from haico.db.models import (
    Conversation,
    ConversationBranch,
    Document,
    DocumentBody,
    SearchEntry,
)
from haico.db.repositories.workspace import DOCUMENT_TEXT

# The text-search configuration (the migration uses the same); a constant, never input.
TS_CONFIG = "english"
_CONFIG: ColumnElement[str] = literal_column(f"'{TS_CONFIG}'::regconfig")
# At most this many characters of a text are indexed (a tsvector holds at most 1 MB).
MAX_INDEXED = 100_000

_entry = table_of(SearchEntry)
_doc = table_of(Document)
_body = table_of(DocumentBody)
_conv = Conversation.__table__
_branch = ConversationBranch.__table__


@dataclass(frozen=True)
class BranchHit:
    thread_id: str
    root_thread_id: str
    name: str | None
    summary: str | None
    turn_index: int
    branch_point_turn: int | None
    forked_from_turn: int | None


@dataclass(frozen=True)
class Hit:
    thread_id: str
    root_thread_id: str
    turn_index: int
    kind: str
    content: str


# PostgreSQL: the rows come from three arrays, each row's vector computed from its
# content. SQLite: from a JSON list of [kind, content, digest] (no vectors there).
_PG_ROWS = (
    func.unnest(
        bindparam("e_kinds", type_=ARRAY(String())),
        bindparam("e_contents", type_=ARRAY(Text())),
        bindparam("e_digests", type_=ARRAY(String())),
    )
    .table_valued("kind", "content", "digest")
    .render_derived(name="v")
)
_PG_ENTRIES = insert(_entry).from_select(
    ["user_id", "root_thread_id", "thread_id", "turn_index", "kind", "content", "digest", "tsv"],
    select(
        *(bindparam(name) for name in ("e_user", "e_root", "e_thread", "e_turn")),
        _PG_ROWS.c.kind,
        _PG_ROWS.c.content,
        _PG_ROWS.c.digest,
        func.to_tsvector(_CONFIG, _PG_ROWS.c.content),
    ),
)
# The same rows with their vectors left null, for `fill_vectors` to compute once the
# writing transaction has committed: search does not match them until then.
_PG_ENTRIES_UNVECTORED = insert(_entry).from_select(
    ["user_id", "root_thread_id", "thread_id", "turn_index", "kind", "content", "digest"],
    select(
        *(bindparam(name) for name in ("e_user", "e_root", "e_thread", "e_turn")),
        _PG_ROWS.c.kind,
        _PG_ROWS.c.content,
        _PG_ROWS.c.digest,
    ),
)

# PostgreSQL: a new node's document entry (vector left null, as above) whose text is
# the `DOCUMENT_TEXT` parameter of the document row's own write
# (`workspace.document_write`): in one statement with it, the text is sent once.
_PG_DOCUMENT_ENTRY = insert(_entry).values(
    user_id=bindparam("e_user"),
    root_thread_id=bindparam("e_root"),
    thread_id=bindparam("e_thread"),
    turn_index=bindparam("e_turn"),
    kind=bindparam("e_kind"),
    content=func.left(bindparam(DOCUMENT_TEXT, type_=Text()), MAX_INDEXED),
    digest=bindparam("e_digest"),
)

# PostgreSQL, at the end of a turn: the message and the reply from the arrays, and the
# thread's live document read in the same statement. The document gets a row only when
# it is not blank and its digest differs from the last one indexed for the thread (a
# stored body's hash is that digest already: both are the SHA-256 of its UTF-8 text).
# "Not blank" is a POSIX-class test here where `node_entries` uses `str.strip()`; they
# differ only for a document of nothing but exotic whitespace.
_LIVE_TEXT = func.coalesce(_body.c.content, _doc.c.content)
_LIVE_DIGEST = case(
    (_body.c.content.is_not(None), _body.c.hash),
    else_=func.encode(func.sha256(func.convert_to(_doc.c.content, "UTF8")), "hex"),
)
_LAST_DIGEST = (
    select(_entry.c.digest)
    .where(_entry.c.thread_id == bindparam("e_thread"), _entry.c.kind == "document")
    .order_by(_entry.c.turn_index.desc(), _entry.c.id.desc())
    .limit(1)
    .scalar_subquery()
)
_live = (
    select(_LIVE_TEXT.label("content"), _LIVE_DIGEST.label("digest"))
    .select_from(_doc.outerjoin(_body, _body.c.hash == _doc.c.body_hash))
    .where(_doc.c.thread_id == bindparam("e_thread"))
    .subquery("live")
)
# Typed: the branches of a UNION give PostgreSQL no column to infer a type from.
_NODE = (
    bindparam("e_user", type_=BigInteger()),
    bindparam("e_root", type_=String()),
    bindparam("e_thread", type_=String()),
    bindparam("e_turn", type_=Integer()),
)
_PG_TURN_ENTRIES = insert(_entry).from_select(
    ["user_id", "root_thread_id", "thread_id", "turn_index", "kind", "content", "digest", "tsv"],
    union_all(
        select(
            *_NODE,
            _PG_ROWS.c.kind,
            _PG_ROWS.c.content,
            _PG_ROWS.c.digest,
            func.to_tsvector(_CONFIG, _PG_ROWS.c.content),
        ),
        select(
            *_NODE,
            literal("document"),
            func.left(_live.c.content, MAX_INDEXED),
            _live.c.digest,
            func.to_tsvector(_CONFIG, func.left(_live.c.content, MAX_INDEXED)),
        ).where(
            _live.c.content.op("~")("[^[:space:]]"),
            _live.c.digest.is_distinct_from(_LAST_DIGEST),
        ),
    ),
)
_SQLITE_ROWS = func.json_each(bindparam("e_rows")).table_valued("value")
_SQLITE_ENTRIES = insert(_entry).from_select(
    ["user_id", "root_thread_id", "thread_id", "turn_index", "kind", "content", "digest"],
    select(
        *(bindparam(name) for name in ("e_user", "e_root", "e_thread", "e_turn")),
        *(func.json_extract(_SQLITE_ROWS.c.value, f"$[{i}]") for i in range(3)),
    ),
)


def entries_write(
    s: AsyncSession,
    *,
    user_id: int,
    root_thread_id: str,
    thread_id: str,
    turn_index: int,
    texts: Iterable[tuple[str, str, str | None]],
    vectors: bool = True,
) -> Write:
    """The write that indexes `(kind, content, digest)` texts of node
    `thread_id:turn_index`, one row each; blank texts are skipped (with none left it
    inserts nothing). One statement, built once, whatever the number of rows. On
    PostgreSQL, `vectors=False` leaves the rows' vectors to `fill_vectors`."""
    node = _node(user_id, root_thread_id, thread_id, turn_index)
    if dialect_of(s).is_postgres:
        return _PG_ENTRIES if vectors else _PG_ENTRIES_UNVECTORED, {**node, **_pg_rows(texts)}
    return _SQLITE_ENTRIES, {**node, "e_rows": json.dumps(_indexed(texts))}


def document_entry_write(
    *,
    user_id: int,
    root_thread_id: str,
    thread_id: str,
    turn_index: int,
    document: str,
    digest: str,
) -> Write:
    """PostgreSQL: the write that indexes `document` (not blank) at a node, its vector
    left to `fill_vectors`; its text shares the document row's parameter."""
    node = _node(user_id, root_thread_id, thread_id, turn_index)
    return _PG_DOCUMENT_ENTRY, {
        **node,
        "e_kind": "document",
        "e_digest": digest,
        DOCUMENT_TEXT: document,
    }


def turn_entries_write(
    *,
    user_id: int,
    root_thread_id: str,
    thread_id: str,
    turn_index: int,
    user_message: str,
    reply: str,
) -> Write:
    """PostgreSQL: the write that indexes a finished turn, its message, its reply and
    (when it changed) the thread's live document, which it reads itself: no read
    before it, so it can run as one statement with the turn's other closing writes."""
    texts = [("user", user_message, None), ("assistant", reply, None)]
    node = _node(user_id, root_thread_id, thread_id, turn_index)
    return _PG_TURN_ENTRIES, {**node, **_pg_rows(texts)}


def _node(user_id: int, root_thread_id: str, thread_id: str, turn_index: int) -> dict[str, Any]:
    """The parameters naming the node (and its owner) an entry belongs to."""
    return {
        "e_user": user_id,
        "e_root": root_thread_id,
        "e_thread": thread_id,
        "e_turn": turn_index,
    }


def _indexed(texts: Iterable[tuple[str, str, str | None]]) -> list[tuple[str, str, str | None]]:
    """The texts that get a row: not blank, cut to `MAX_INDEXED` characters."""
    return [(k, c[:MAX_INDEXED], d) for k, c, d in texts if c.strip()]


def _pg_rows(texts: Iterable[tuple[str, str, str | None]]) -> dict[str, Any]:
    """The rows of `_indexed(texts)` as the three arrays the PostgreSQL writes unnest."""
    rows = _indexed(texts)
    return {
        "e_kinds": [k for k, _, _ in rows],
        "e_contents": [c for _, c, _ in rows],
        "e_digests": [d for _, _, d in rows],
    }


async def last_document_digest(
    s: AsyncSession, thread_id: str, *, before: int | None = None
) -> str | None:
    """The digest of the document most recently indexed for this thread (at a node
    before turn `before`, if given)."""
    stmt = select(SearchEntry.digest).where(
        SearchEntry.thread_id == thread_id, SearchEntry.kind == "document"
    )
    if before is not None:
        stmt = stmt.where(SearchEntry.turn_index < before)
    return await s.scalar(
        stmt.order_by(SearchEntry.turn_index.desc(), SearchEntry.id.desc()).limit(1)
    )


async def delete_documents_at(s: AsyncSession, thread_id: str, turn_index: int) -> None:
    """Drop the document entries of node `thread_id:turn_index`."""
    await s.execute(
        delete(SearchEntry).where(
            SearchEntry.thread_id == thread_id,
            SearchEntry.turn_index == turn_index,
            SearchEntry.kind == "document",
        )
    )


async def fill_vectors(
    s: AsyncSession, *, node: tuple[str, int] | None = None, limit: int = 50
) -> int:
    """PostgreSQL: compute the vectors left null (`entries_write(vectors=False)`), of
    node `(thread_id, turn_index)` or of any `limit` entries; how many were filled.
    Rows another transaction is filling are skipped, not waited for."""
    pending = select(_entry.c.id).where(_entry.c.tsv.is_(None))
    if node is not None:
        pending = pending.where(_entry.c.thread_id == node[0], _entry.c.turn_index == node[1])
    pending = pending.limit(limit).with_for_update(skip_locked=True)
    result = await s.execute(
        update(_entry)
        .where(_entry.c.id.in_(pending.scalar_subquery()))
        .values(tsv=func.to_tsvector(_CONFIG, _entry.c.content))
    )
    return int(getattr(result, "rowcount", 0) or 0)


def _visible() -> ColumnElement[bool]:
    return and_(
        _conv.c.deleted_at.is_(None),
        _conv.c.building.is_(False),
        or_(_branch.c.status.is_(None), _branch.c.status == "active"),
        _entry.c.turn_index <= _conv.c.turn_index,
    )


def words_of(query: str) -> list[str]:
    """The words a text must contain for the portable matcher (quotes dropped, and the
    words a leading `-` excludes, which the service checks)."""
    words = []
    for raw in query.replace('"', " ").split():
        word = raw.lower()
        if word and word != "or" and not word.startswith("-"):  # `-x` excludes x
            words.append(word)
    return words


def _mine_or(column: Any, user_id: int, root_column: Any, roots: Sequence[str]) -> Any:
    """The user's rows, and with `roots` also those of these families (shared ones)."""
    mine = column == user_id
    return or_(mine, root_column.in_(list(roots))) if roots else mine


async def find(
    s: AsyncSession, *, user_id: int, query: str, limit: int, roots: Sequence[str] = ()
) -> list[Hit]:
    """The user's best matching entries (and `roots`' families'), at most `limit`."""
    base = (
        select(
            _entry.c.thread_id,
            _entry.c.root_thread_id,
            _entry.c.turn_index,
            _entry.c.kind,
            _entry.c.content,
        )
        .select_from(
            _entry.join(_conv, _conv.c.thread_id == _entry.c.thread_id).outerjoin(
                _branch, _branch.c.thread_id == _entry.c.thread_id
            )
        )
        .where(_mine_or(_entry.c.user_id, user_id, _entry.c.root_thread_id, roots), _visible())
        .limit(limit)
    )
    if dialect_of(s).is_postgres:
        tsquery = func.websearch_to_tsquery(_CONFIG, query)
        stmt = base.where(_entry.c.tsv.op("@@")(tsquery)).order_by(
            func.ts_rank(_entry.c.tsv, tsquery).desc(), _entry.c.id.desc()
        )
    else:
        words = words_of(query)
        if not words:
            return []
        lowered = func.lower(_entry.c.content)
        stmt = base.where(*(func.instr(lowered, w) > 0 for w in words)).order_by(_entry.c.id.desc())
    return [
        Hit(r.thread_id, r.root_thread_id, r.turn_index, r.kind, r.content)
        for r in (await s.execute(stmt)).all()
    ]


async def find_branches(
    s: AsyncSession, *, user_id: int, words: list[str], limit: int, roots: Sequence[str] = ()
) -> list[BranchHit]:
    """The user's visible threads whose name or summary holds every word (as a
    substring, lowered: the caller checks whole words), most recently active first."""
    if not words:
        return []
    text = func.lower(func.coalesce(_conv.c.name, "") + " " + func.coalesce(_conv.c.summary, ""))
    stmt = (
        select(
            _conv.c.thread_id,
            _conv.c.root_thread_id,
            _conv.c.name,
            _conv.c.summary,
            _conv.c.turn_index,
            _branch.c.branch_point_turn,
            _conv.c.forked_from_turn,
        )
        .select_from(_conv.outerjoin(_branch, _branch.c.thread_id == _conv.c.thread_id))
        .where(
            _mine_or(_conv.c.user_id, user_id, _conv.c.root_thread_id, roots),
            _conv.c.deleted_at.is_(None),
            _conv.c.building.is_(False),
            or_(_branch.c.status.is_(None), _branch.c.status == "active"),
            or_(_conv.c.name.is_not(None), _conv.c.summary.is_not(None)),
            *(
                func.strpos(text, w) > 0 if dialect_of(s).is_postgres else func.instr(text, w) > 0
                for w in words
            ),
        )
        .order_by(_conv.c.updated_at.desc(), _conv.c.thread_id)
        .limit(limit)
    )
    return [
        BranchHit(
            r.thread_id,
            r.root_thread_id,
            r.name,
            r.summary,
            r.turn_index,
            r.branch_point_turn,
            r.forked_from_turn,
        )
        for r in (await s.execute(stmt)).all()
    ]
