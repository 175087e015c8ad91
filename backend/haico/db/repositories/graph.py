"""Queries behind the history graph of a family. Reads only, and a fixed number of them.

A family is every thread sharing a `root_thread_id`, so its threads and branch rows
come back in one indexed query, whatever its size or depth; the service walks the
lineage in memory. Turn records and artifact counts are then read for the threads it
shows, by IN-list, again one query each.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import and_, func, or_, select, true, union
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import dialect_of
from haico.db.models import Artifact, Conversation, ConversationBranch, WorkspaceSnapshot
from haico.domain import NodeState

_conv = Conversation.__table__
_branch = ConversationBranch.__table__
_snap = WorkspaceSnapshot.__table__
_art = Artifact.__table__

# Newest turn records first; the cap drops from the other end.
_NEWEST_FIRST = (_snap.c.captured_at.desc(), _snap.c.turn_index.desc(), _snap.c.thread_id.desc())


@dataclass(frozen=True)
class NodeRow:
    thread_id: str
    turn_index: int
    user_message: str
    captured_at: datetime
    state: NodeState
    kind: str = "turn"
    merged_from: str | None = None


async def newest_owned_nodes(
    session: AsyncSession,
    *,
    thread_ids: Collection[str],
    limit: int,
    preview_chars: int,
    also: dict[str, tuple[int, int]] | None = None,
) -> tuple[list[NodeRow], list[NodeRow]]:
    """Turn records of the owned turns of `thread_ids`, newest first, at most `limit`;
    and, in the same query, those of `also` (thread -> first and last turn, inclusive)
    that are not among them.

    A thread owns the turns after its branch point (a root owns them all) up to its
    clock. Only light columns are read: never the snapshot's JSON or document body.
    The newest are picked on narrow rows first, so the family's size costs a sort of
    ids and stamps, and the message preview is cut only for the rows kept.
    """
    newest = (
        select(_snap.c.id)
        .select_from(
            _snap.join(_conv, _conv.c.thread_id == _snap.c.thread_id).outerjoin(
                _branch, _branch.c.thread_id == _snap.c.thread_id
            )
        )
        .where(
            dialect_of(session).one_of(_snap.c.thread_id, thread_ids),
            _snap.c.turn_index > func.coalesce(_branch.c.branch_point_turn, 0),
            _snap.c.turn_index <= _conv.c.turn_index,
        )
        .order_by(*_NEWEST_FIRST)
        .limit(limit)
        .subquery("newest")
    )
    columns = (
        _snap.c.thread_id,
        _snap.c.turn_index,
        func.substr(_snap.c.user_message, 1, preview_chars).label("user_message"),
        _snap.c.captured_at,
        _snap.c.state,
        _snap.c.kind,
        _snap.c.merged_from,
    )
    if also:
        in_ranges = or_(
            *(
                and_(_snap.c.thread_id == t, _snap.c.turn_index.between(lo, hi))
                for t, (lo, hi) in also.items()
            )
        )
        wanted = union(select(newest.c.id), select(_snap.c.id).where(in_ranges)).subquery("w")
        stmt = (
            select(*columns, newest.c.id.is_not(None).label("is_newest"))
            .join(wanted, wanted.c.id == _snap.c.id)
            .outerjoin(newest, newest.c.id == _snap.c.id)
            .order_by(*_NEWEST_FIRST)
        )
    else:
        stmt = (
            select(*columns, true().label("is_newest"))
            .join(newest, newest.c.id == _snap.c.id)
            .order_by(*_NEWEST_FIRST)
        )
    first: list[NodeRow] = []
    rest: list[NodeRow] = []
    for r in (await session.execute(stmt)).all():
        row = NodeRow(
            thread_id=r.thread_id,
            turn_index=r.turn_index,
            user_message=r.user_message or "",
            captured_at=r.captured_at,
            state=NodeState(r.state),
            kind=r.kind,
            merged_from=r.merged_from,
        )
        (first if r.is_newest else rest).append(row)
    return first, rest


async def nodes_in_ranges(
    session: AsyncSession,
    *,
    ranges: dict[str, tuple[int, int]],
    skip: set[tuple[str, int]],
    preview_chars: int,
) -> list[NodeRow]:
    """Turn records of each thread between two turns (inclusive), minus `skip`."""
    if not ranges:
        return []
    stmt = select(
        _snap.c.thread_id,
        _snap.c.turn_index,
        func.substr(_snap.c.user_message, 1, preview_chars).label("user_message"),
        _snap.c.captured_at,
        _snap.c.state,
    ).where(
        or_(
            *(
                and_(_snap.c.thread_id == t, _snap.c.turn_index.between(lo, hi))
                for t, (lo, hi) in ranges.items()
            )
        )
    )
    return [
        NodeRow(
            thread_id=r.thread_id,
            turn_index=r.turn_index,
            user_message=r.user_message or "",
            captured_at=r.captured_at,
            state=NodeState(r.state),
        )
        for r in (await session.execute(stmt)).all()
        if (r.thread_id, r.turn_index) not in skip
    ]


async def artifact_counts(
    session: AsyncSession, thread_ids: Collection[str]
) -> dict[tuple[str, int], int]:
    """How many artifacts each (thread, turn) of `thread_ids` produced, in one grouped query."""
    stmt = (
        select(_art.c.thread_id, _art.c.turn_index, func.count().label("n"))
        .where(dialect_of(session).one_of(_art.c.thread_id, thread_ids))
        .group_by(_art.c.thread_id, _art.c.turn_index)
    )
    return {(r.thread_id, r.turn_index): int(r.n) for r in (await session.execute(stmt)).all()}
