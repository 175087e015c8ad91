"""Whole-database reads for the consistency check (`services.consistency`)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ChatHead, Conversation


async def family_roots(s: AsyncSession) -> list[str]:
    """Every family's root thread id, as its threads name it (the root row may be gone)."""
    stmt = select(Conversation.root_thread_id).distinct().order_by(Conversation.root_thread_id)
    return list((await s.execute(stmt)).scalars().all())


async def thread_ids(s: AsyncSession) -> set[str]:
    """The id of every thread that has a conversation row."""
    return set((await s.execute(select(Conversation.thread_id))).scalars().all())


async def heads(s: AsyncSession) -> dict[str, ChatHead]:
    """Every family's head row, by root thread id."""
    rows = (await s.execute(select(ChatHead))).scalars().all()
    return {row.root_thread_id: row for row in rows}
