"""Whole-database reads for the consistency check (`services.maintenance.consistency`), the janitor
and retention: families with branches, orphan drafts, half-built threads."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import ChatHead, Conversation, ConversationBranch
from haico.domain import BranchStatus


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


async def families_with_branches(s: AsyncSession) -> Sequence[str]:
    stmt = (
        select(Conversation.root_thread_id)
        .where(Conversation.thread_id != Conversation.root_thread_id)
        .distinct()
    )
    return (await s.execute(stmt)).scalars().all()


async def orphan_drafts(s: AsyncSession) -> Sequence[str]:
    """Drafts that no family has as its working thread."""
    stmt = (
        select(ConversationBranch.thread_id)
        .outerjoin(ChatHead, ChatHead.working_thread_id == ConversationBranch.thread_id)
        .where(ConversationBranch.status == BranchStatus.DRAFT, ChatHead.root_thread_id.is_(None))
    )
    return (await s.execute(stmt)).scalars().all()


async def half_built_before(s: AsyncSession, cutoff: datetime) -> tuple[list[str], list[str]]:
    """(pending branches, building forks) created before `cutoff`."""
    pending = await s.execute(
        select(ConversationBranch.thread_id).where(
            ConversationBranch.status == BranchStatus.PENDING,
            ConversationBranch.created_at < cutoff,
        )
    )
    building = await s.execute(
        select(Conversation.thread_id).where(
            Conversation.building.is_(True), Conversation.created_at < cutoff
        )
    )
    return list(pending.scalars().all()), list(building.scalars().all())
