"""Turn records for the AHP host's views: one query for any set of nodes."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, tuple_
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import WorkspaceSnapshot
from haico.domain import NodeState

_snap = WorkspaceSnapshot.__table__


@dataclass(frozen=True)
class TurnRow:
    order: int  # the snapshot row's id: creation order, never reused
    thread_id: str
    turn_index: int
    user_message: str
    state: NodeState
    reply: str
    captured_at: datetime
    completed_at: datetime | None
    merged_from: str | None = None  # a merge node's source
    author: str | None = None  # a grantee who made the node
    kind: str = "turn"  # `NodeKind`


async def turn_rows(s: AsyncSession, keys: Collection[tuple[str, int]]) -> list[TurnRow]:
    """The node records of `keys` ((thread, turn) pairs) that exist, in creation order."""
    if not keys:
        return []
    stmt = (
        select(
            _snap.c.id,
            _snap.c.thread_id,
            _snap.c.turn_index,
            _snap.c.user_message,
            _snap.c.state,
            _snap.c.reply,
            _snap.c.captured_at,
            _snap.c.completed_at,
            _snap.c.merged_from,
            _snap.c.author,
            _snap.c.kind,
        )
        .where(tuple_(_snap.c.thread_id, _snap.c.turn_index).in_(list(keys)))
        .order_by(_snap.c.id)
    )
    return [
        TurnRow(
            order=r.id,
            thread_id=r.thread_id,
            turn_index=r.turn_index,
            user_message=r.user_message or "",
            state=NodeState(r.state),
            reply=r.reply or "",
            captured_at=r.captured_at,
            completed_at=r.completed_at,
            merged_from=r.merged_from,
            author=r.author,
            kind=r.kind or "turn",
        )
        for r in (await s.execute(stmt)).all()
    ]
