"""Coding's queries: codebooks and codes, codings, judgments, and the node texts a
span is measured against (the whole user message lives in the search index: the turn
record keeps a preview)."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Any

from sqlalchemy import delete, func, select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import table_of
from haico.db.dialect import dialect_of
from haico.db.models import Code, Codebook, Coding, Judgment, Note, SearchEntry, WorkspaceSnapshot

_snap = table_of(WorkspaceSnapshot)
_search = table_of(SearchEntry)
_coding = table_of(Coding)


async def codebooks_of(s: AsyncSession, user_ids: Collection[int]) -> list[Codebook]:
    """These users' codebooks, oldest first."""
    rows = await s.scalars(
        select(Codebook).where(Codebook.user_id.in_(list(user_ids))).order_by(Codebook.id)
    )
    return list(rows)


async def codes_of(s: AsyncSession, codebook_ids: Collection[int]) -> list[Code]:
    """The codes of these codebooks, in the order they were added."""
    if not codebook_ids:
        return []
    rows = await s.scalars(
        select(Code).where(Code.codebook_id.in_(list(codebook_ids))).order_by(Code.id)
    )
    return list(rows)


async def code_with_book(s: AsyncSession, code_id: int) -> tuple[Code, Codebook] | None:
    row = (
        await s.execute(
            select(Code, Codebook)
            .join(Codebook, Codebook.id == Code.codebook_id)
            .where(Code.id == code_id)
        )
    ).first()
    return (row[0], row[1]) if row is not None else None


async def user_note_codes(s: AsyncSession, user_id: int) -> list[list[str]]:
    """The codes lists of every note the user wrote."""
    rows = await s.execute(select(Note.codes).where(Note.user_id == user_id))
    return [list(r.codes or []) for r in rows]


async def codings_of(
    s: AsyncSession, roots: Collection[str], *, coder_id: int | None = None
) -> list[Coding]:
    """The codings made in these families (only `coder_id`'s when given), oldest first."""
    stmt = select(Coding).where(dialect_of(s).one_of(_coding.c.root_thread_id, roots))
    if coder_id is not None:
        stmt = stmt.where(Coding.user_id == coder_id)
    return list(await s.scalars(stmt.order_by(Coding.created_at, Coding.id)))


async def agreement_rows(
    s: AsyncSession, roots: Collection[str]
) -> list[tuple[str, int, str, int, int]]:
    """(thread, turn, coder name, coder id, code id) of every coding in these families:
    the only columns agreement reads. An imported coding counts as its recorded coder's
    (`imported_author`), so an imported family's agreement is the one it was exported
    with."""
    coder = func.coalesce(Coding.imported_author, Coding.coder)
    rows = await s.execute(
        select(Coding.thread_id, Coding.turn_index, coder, Coding.user_id, Coding.code_id).where(
            dialect_of(s).one_of(_coding.c.root_thread_id, roots)
        )
    )
    return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]


async def judgments_of(
    s: AsyncSession, roots: Collection[str], *, judge_id: int | None = None
) -> list[Judgment]:
    stmt = select(Judgment).where(dialect_of(s).one_of(table_of(Judgment).c.root_thread_id, roots))
    if judge_id is not None:
        stmt = stmt.where(Judgment.user_id == judge_id)
    return list(await s.scalars(stmt.order_by(Judgment.created_at, Judgment.id)))


async def node_texts(
    s: AsyncSession, nodes: Iterable[tuple[str, int]]
) -> dict[tuple[str, int], tuple[str, str]]:
    """Each node's whole user message and reply."""
    keys = list(dict.fromkeys(nodes))
    if not keys:
        return {}
    full = (
        select(_search.c.content)
        .where(
            _search.c.thread_id == _snap.c.thread_id,
            _search.c.turn_index == _snap.c.turn_index,
            _search.c.kind == "user",
        )
        .limit(1)
        .scalar_subquery()
    )
    out: dict[tuple[str, int], tuple[str, str]] = {}
    # In pages: a tuple IN list is bound parameter by parameter.
    for i in range(0, len(keys), 500):
        page = keys[i : i + 500]
        stmt = select(
            _snap.c.thread_id,
            _snap.c.turn_index,
            func.coalesce(full, _snap.c.user_message).label("user_message"),
            _snap.c.reply,
        ).where(tuple_(_snap.c.thread_id, _snap.c.turn_index).in_(page))
        for r in (await s.execute(stmt)).all():
            out[(r.thread_id, r.turn_index)] = (r.user_message or "", r.reply or "")
    return out


async def code_names(s: AsyncSession, code_ids: Collection[int]) -> dict[int, str]:
    if not code_ids:
        return {}
    rows = await s.execute(select(Code.id, Code.name).where(Code.id.in_(list(code_ids))))
    return {r.id: r.name for r in rows}


async def codes_by_id(s: AsyncSession, code_ids: Collection[int]) -> list[Code]:
    rows = await s.scalars(select(Code).where(Code.id.in_(list(code_ids))).order_by(Code.id))
    return list(rows)


async def coding_rows(
    s: AsyncSession, roots: Collection[str], *, coder_id: int | None = None
) -> list[Any]:
    """`codings_of` as plain rows of the columns an export writes (same attribute
    names, no ORM identity): tens of thousands at a time."""
    c = _coding.c
    stmt = select(
        c.id,
        c.root_thread_id,
        c.thread_id,
        c.turn_index,
        c.code_id,
        c.field,
        c.span_start,
        c.span_end,
        c.memo,
        c.coder,
        c.created_at,
    ).where(dialect_of(s).one_of(c.root_thread_id, roots))
    if coder_id is not None:
        stmt = stmt.where(_coding.c.user_id == coder_id)
    return list((await s.execute(stmt.order_by(_coding.c.created_at, _coding.c.id))).all())


async def codebooks_by_id(s: AsyncSession, codebook_ids: Collection[int]) -> list[Codebook]:
    if not codebook_ids:
        return []
    rows = await s.scalars(
        select(Codebook).where(Codebook.id.in_(list(codebook_ids))).order_by(Codebook.id)
    )
    return list(rows)


async def delete_imported(s: AsyncSession, *, root: str, codebook_ids: Collection[int]) -> None:
    """Undo an import's coding: the family's judgments and the codebooks it made (their
    codes and codings go with them)."""
    await s.execute(delete(Judgment).where(Judgment.root_thread_id == root))
    if codebook_ids:
        await s.execute(delete(Codebook).where(Codebook.id.in_(list(codebook_ids))))
