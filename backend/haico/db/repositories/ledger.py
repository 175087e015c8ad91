"""The research ledger's queries: node provenance, workspace edits, notes.

The writes that ride in another statement (a turn's close, a live edit) are built
once here with named parameters (`Write`); everything else is a plain query.

One piece on purpose: both halves (the ledger's own rows, and the reads the reports
join over them) query the same three tables with the same node keys.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Select,
    String,
    Text,
    and_,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    null,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import JsonType, table_of
from haico.db.dialect import Write, dialect_of
from haico.db.models import (
    Artifact,
    Coding,
    Conversation,
    DocumentBody,
    NodeProvenance,
    Note,
    SearchEntry,
    User,
    WorkspaceEdit,
    WorkspaceSnapshot,
)

_prov = table_of(NodeProvenance)
_edit = table_of(WorkspaceEdit)
_note = table_of(Note)
_user = table_of(User)

PROVENANCE_FIELDS = (
    "provider",
    "model",
    "profile_id",
    "params",
    "instructions_sha256",
    "input_tokens",
    "output_tokens",
    "tokens_estimated",
    "first_token_ms",
    "duration_ms",
    "tool_calls",
    "cost_usd",
    "profile_name",
    "ignored_params",
)

_PROVENANCE = insert(_prov).values(
    {
        "thread_id": bindparam("pv_thread"),
        "turn_index": bindparam("pv_turn"),
        **{f: bindparam(f"pv_{f}") for f in PROVENANCE_FIELDS},
    }
)


def provenance_write(thread_id: str, turn_index: int, values: dict[str, Any]) -> Write:
    """The write that records a node's provenance (`values` keyed by PROVENANCE_FIELDS)."""
    params = {f"pv_{f}": values.get(f) for f in PROVENANCE_FIELDS}
    return _PROVENANCE, {"pv_thread": thread_id, "pv_turn": turn_index, **params}


# A user's edit is signed with the user's name, read in the same statement.
_EDIT = insert(_edit).values(
    thread_id=bindparam("we_thread"),
    turn_index=bindparam("we_turn"),
    surface=bindparam("we_surface"),
    uid=bindparam("we_uid", type_=String()),
    kind=bindparam("we_kind"),
    origin=bindparam("we_origin"),
    author=func.coalesce(
        bindparam("we_author", type_=String()),
        select(_user.c.name).where(_user.c.id == bindparam("we_user")).scalar_subquery(),
    ),
    at=bindparam("we_at"),
)


def edit_write(
    *,
    thread_id: str,
    turn_index: int,
    surface: str,
    uid: str | None,
    kind: str,
    origin: str,
    author: str | None,
    user_id: int,
    at: datetime,
) -> Write:
    """The write that records one workspace change (`author` None: the user's name)."""
    return _EDIT, {
        "we_thread": thread_id,
        "we_turn": turn_index,
        "we_surface": surface,
        "we_uid": uid,
        "we_kind": kind,
        "we_origin": origin,
        "we_author": author,
        "we_user": user_id,
        "we_at": at,
    }


async def get_provenance(s: AsyncSession, thread_id: str, turn_index: int) -> NodeProvenance | None:
    return await s.get(NodeProvenance, (thread_id, turn_index))


async def provenance_of(
    s: AsyncSession, thread_ids: Collection[str]
) -> dict[tuple[str, int], NodeProvenance]:
    rows = await s.scalars(
        select(NodeProvenance).where(dialect_of(s).one_of(_prov.c.thread_id, thread_ids))
    )
    return {(p.thread_id, p.turn_index): p for p in rows}


async def provenance_at(
    s: AsyncSession, nodes: Collection[tuple[str, int]]
) -> dict[tuple[str, int], NodeProvenance]:
    """The provenance of these nodes (those that have one), in one query."""
    if not nodes:
        return {}
    rows = await s.scalars(
        select(NodeProvenance).where(tuple_(_prov.c.thread_id, _prov.c.turn_index).in_(list(nodes)))
    )
    return {(p.thread_id, p.turn_index): p for p in rows}


async def edits_at(s: AsyncSession, nodes: Iterable[tuple[str, int]]) -> list[WorkspaceEdit]:
    """The edits recorded at these nodes, oldest first."""
    wanted = set(nodes)
    if not wanted:
        return []
    threads = {t for t, _ in wanted}
    rows = await s.scalars(
        select(WorkspaceEdit)
        .where(dialect_of(s).one_of(_edit.c.thread_id, threads))
        .order_by(WorkspaceEdit.at, WorkspaceEdit.id)
    )
    return [e for e in rows if (e.thread_id, e.turn_index) in wanted]


async def edits_of(s: AsyncSession, thread_ids: Collection[str]) -> list[WorkspaceEdit]:
    rows = await s.scalars(
        select(WorkspaceEdit)
        .where(dialect_of(s).one_of(_edit.c.thread_id, thread_ids))
        .order_by(WorkspaceEdit.at, WorkspaceEdit.id)
    )
    return list(rows)


async def edit_counts(
    s: AsyncSession, thread_ids: Collection[str]
) -> dict[tuple[str, int, str], int]:
    """(thread, turn, origin) -> how many edits, in one grouped query."""
    stmt = (
        select(_edit.c.thread_id, _edit.c.turn_index, _edit.c.origin, func.count().label("n"))
        .where(dialect_of(s).one_of(_edit.c.thread_id, thread_ids))
        .group_by(_edit.c.thread_id, _edit.c.turn_index, _edit.c.origin)
    )
    return {(r.thread_id, r.turn_index, r.origin): int(r.n) for r in (await s.execute(stmt)).all()}


async def notes_of(s: AsyncSession, thread_ids: Collection[str]) -> list[Note]:
    """The notes on nodes of these threads, oldest first."""
    rows = await s.scalars(
        select(Note)
        .where(dialect_of(s).one_of(_note.c.thread_id, thread_ids))
        .order_by(Note.created_at, Note.id)
    )
    return list(rows)


async def notes_at(s: AsyncSession, thread_id: str, turn_index: int) -> list[Note]:
    rows = await s.scalars(
        select(Note)
        .where(Note.thread_id == thread_id, Note.turn_index == turn_index)
        .order_by(Note.created_at, Note.id)
    )
    return list(rows)


async def user_codes(s: AsyncSession, user_id: int) -> list[list[str]]:
    """The codes lists of every note of the user on a live thread."""
    rows = await s.execute(
        select(Note.codes)
        .join(Conversation, Conversation.thread_id == Note.thread_id)
        .where(Note.user_id == user_id, Conversation.deleted_at.is_(None))
    )
    return [list(r.codes or []) for r in rows]


async def delete_at(s: AsyncSession, thread_id: str, turns: Collection[int]) -> None:
    """Drop the ledger rows of these nodes (their turns were pruned), codings too."""
    ks = list(turns)
    for table in (_prov, _edit, _note, table_of(Coding)):
        await s.execute(
            delete(table).where(table.c.thread_id == thread_id, table.c.turn_index.in_(ks))
        )


# ---- reads behind the analysis export and the path document ----

_snap = table_of(WorkspaceSnapshot)
_body = table_of(DocumentBody)
_search = table_of(SearchEntry)
_conv = table_of(Conversation)


def node_rows_stmt(thread_id: str, first: int, last: int) -> Select[Any]:
    """One thread's turn records `first..last+1` for the export, oldest first: the
    record, the workspace it started from (document length, item lists as JSON text),
    the whole user message (from the search index; the record keeps a preview) and
    the provenance."""
    full_message = (
        select(_search.c.content)
        .where(
            _search.c.thread_id == _snap.c.thread_id,
            _search.c.turn_index == _snap.c.turn_index,
            _search.c.kind == "user",
        )
        .limit(1)
        .scalar_subquery()
    )
    return (
        select(
            _snap.c.turn_index,
            _snap.c.kind,
            _snap.c.state,
            _snap.c.captured_at,
            _snap.c.completed_at,
            func.coalesce(full_message, _snap.c.user_message).label("user_message"),
            _snap.c.reply,
            _snap.c.objective,
            _snap.c.document_title,
            func.length(_body.c.content).label("document_chars"),
            cast(_snap.c.preferences, Text).label("preferences"),
            cast(_snap.c.todos, Text).label("todos"),
            cast(_snap.c.rejected, Text).label("rejected"),
            *(_prov.c[f] for f in PROVENANCE_FIELDS if f != "params"),
        )
        .select_from(
            _snap.outerjoin(_body, _body.c.hash == _snap.c.document_hash).outerjoin(
                _prov,
                and_(
                    _prov.c.thread_id == _snap.c.thread_id,
                    _prov.c.turn_index == _snap.c.turn_index,
                ),
            )
        )
        .where(
            _snap.c.thread_id == thread_id,
            _snap.c.turn_index >= first,
            _snap.c.turn_index <= last + 1,
        )
        .order_by(_snap.c.turn_index)
    )


async def node_times(
    s: AsyncSession, points: Collection[tuple[str, int]]
) -> dict[tuple[str, int], datetime]:
    """When each of these nodes started (those that exist)."""
    if not points:
        return {}
    stmt = select(_snap.c.thread_id, _snap.c.turn_index, _snap.c.captured_at).where(
        tuple_(_snap.c.thread_id, _snap.c.turn_index).in_(list(points))
    )
    return {(r.thread_id, r.turn_index): r.captured_at for r in (await s.execute(stmt)).all()}


async def path_records(s: AsyncSession, thread_id: str, first: int, last: int) -> list[Any]:
    """Turn records `first..last` of a thread with the workspace each started from; the
    item lists come as their JSON text (compared as text, decoded only when changed)."""
    stmt = (
        select(
            _snap.c.turn_index,
            _snap.c.state,
            _snap.c.captured_at,
            _snap.c.user_message,
            _snap.c.reply,
            _snap.c.objective,
            _snap.c.document_title,
            _snap.c.document_hash,
            cast(_snap.c.preferences, Text).label("preferences"),
            cast(_snap.c.todos, Text).label("todos"),
            cast(_snap.c.rejected, Text).label("rejected"),
        )
        .where(
            _snap.c.thread_id == thread_id,
            _snap.c.turn_index >= first,
            _snap.c.turn_index <= last,
        )
        .order_by(_snap.c.turn_index)
    )
    return list((await s.execute(stmt)).all())


async def models_of(s: AsyncSession, thread_ids: Collection[str]) -> dict[tuple[str, int], str]:
    """Each node's model, for these threads."""
    stmt = select(_prov.c.thread_id, _prov.c.turn_index, _prov.c.model).where(
        dialect_of(s).one_of(_prov.c.thread_id, thread_ids)
    )
    return {(r.thread_id, r.turn_index): r.model for r in (await s.execute(stmt)).all()}


async def bodies(s: AsyncSession, hashes: Collection[str]) -> dict[str, str]:
    if not hashes:
        return {}
    stmt = select(_body.c.hash, _body.c.content).where(dialect_of(s).one_of(_body.c.hash, hashes))
    return {r.hash: r.content for r in (await s.execute(stmt)).all()}


async def artifact_titles(s: AsyncSession, thread_id: str) -> dict[int, list[str]]:
    """turn -> titles of the artifacts the thread's turns made."""
    stmt = (
        select(Artifact.turn_index, Artifact.title)
        .where(Artifact.thread_id == thread_id)
        .order_by(Artifact.turn_index, Artifact.id)
    )
    out: dict[int, list[str]] = {}
    for r in (await s.execute(stmt)).all():
        out.setdefault(r.turn_index, []).append(r.title)
    return out


async def user_roots(s: AsyncSession, user_id: int) -> list[str]:
    """The caller's families (root threads not deleted, not being built), oldest first."""
    stmt = (
        select(_conv.c.thread_id)
        .where(
            _conv.c.user_id == user_id,
            _conv.c.thread_id == _conv.c.root_thread_id,
            _conv.c.deleted_at.is_(None),
            _conv.c.building.is_(False),
        )
        .order_by(_conv.c.created_at, _conv.c.thread_id)
    )
    return list((await s.execute(stmt)).scalars())


async def models_and_codes(
    s: AsyncSession, thread_ids: Collection[str]
) -> tuple[dict[tuple[str, int], str], dict[tuple[str, int], list[str]]]:
    """For the graph, in one query: each node's model, and the codes of its notes."""
    one_of = dialect_of(s).one_of
    models = select(
        _prov.c.thread_id,
        _prov.c.turn_index,
        _prov.c.model.label("model"),
        cast(null(), JsonType).label("codes"),
        literal(0).label("id"),
    ).where(one_of(_prov.c.thread_id, thread_ids))
    notes = select(
        _note.c.thread_id,
        _note.c.turn_index,
        cast(null(), String).label("model"),
        _note.c.codes,
        _note.c.id,
    ).where(one_of(_note.c.thread_id, thread_ids))
    both = union_all(models, notes).subquery()
    rows = (await s.execute(select(both).order_by(both.c.id))).all()
    found_models: dict[tuple[str, int], str] = {}
    found_codes: dict[tuple[str, int], list[str]] = {}
    for r in rows:
        key = (r.thread_id, r.turn_index)
        if r.model is not None:
            found_models[key] = r.model
        if r.codes:
            found = found_codes.setdefault(key, [])
            found.extend(c for c in r.codes if c not in found)
    return found_models, found_codes


async def usage_by_thread(s: AsyncSession, thread_ids: Collection[str]) -> dict[str, Any]:
    """thread -> (nodes with provenance, input tokens, output tokens, cost, any estimated)."""
    stmt = (
        select(
            _prov.c.thread_id,
            func.count().label("n"),
            func.sum(_prov.c.input_tokens).label("i"),
            func.sum(_prov.c.output_tokens).label("o"),
            func.sum(_prov.c.cost_usd).label("c"),
            func.max(case((_prov.c.tokens_estimated, 1), else_=0)).label("e"),
        )
        .where(dialect_of(s).one_of(_prov.c.thread_id, thread_ids))
        .group_by(_prov.c.thread_id)
    )
    return {r.thread_id: r for r in (await s.execute(stmt)).all()}
