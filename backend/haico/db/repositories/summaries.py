"""Branch summaries: which threads' summaries are behind their turn clock.

Queries only; `services.big_trees.summaries` owns the rules.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import Conversation


async def behind(s: AsyncSession, *, since: datetime, limit: int) -> list[str]:
    """Listed threads changed since `since` whose summary (if any) was written at an
    older turn clock than theirs, most recently changed first, at most `limit`."""
    stmt = (
        select(Conversation.thread_id)
        .where(
            Conversation.deleted_at.is_(None),
            Conversation.building.is_(False),
            Conversation.turn_index > 0,
            Conversation.updated_at >= since,
            or_(
                Conversation.summary_turn.is_(None),
                Conversation.summary_turn < Conversation.turn_index,
            ),
        )
        .order_by(Conversation.updated_at.desc(), Conversation.thread_id)
        .limit(limit)
    )
    return list((await s.execute(stmt)).scalars().all())
