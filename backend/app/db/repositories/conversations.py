"""Queries over conversations, branches and lineage. Reads only: services commit."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import and_, literal, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ActiveTurn, Conversation, ConversationBranch


@dataclass(frozen=True)
class LineageEntry:
    thread_id: str
    parent_thread_id: str | None
    branch_point_turn: int


async def get_conversation(session: AsyncSession, thread_id: str) -> Conversation | None:
    return await session.get(Conversation, thread_id)


async def get_branch(session: AsyncSession, thread_id: str) -> ConversationBranch | None:
    return await session.get(ConversationBranch, thread_id)


async def lineage(session: AsyncSession, thread_id: str) -> list[LineageEntry]:
    """The thread and its ancestors, nearest first, in one recursive query.

    UNION (not UNION ALL) makes the walk cycle-safe; order is rebuilt by following
    parent links, so there is no depth cap.
    """
    # Parent links never change, so a transaction may reuse a walk it already made.
    cache: dict[str, list[LineageEntry]] = session.info.setdefault("haico_lineage", {})
    if thread_id in cache:
        return cache[thread_id]
    cache[thread_id] = result = await _walk_up(session, thread_id)
    return result


async def _walk_up(session: AsyncSession, thread_id: str) -> list[LineageEntry]:
    cb = ConversationBranch.__table__
    base = (
        select(
            literal(thread_id).label("thread_id"),
            cb.c.parent_thread_id,
            cb.c.branch_point_turn,
        )
        .select_from(cb)
        .where(cb.c.thread_id == thread_id)
    )
    up = base.cte("lineage", recursive=True)
    step = select(cb.c.thread_id, cb.c.parent_thread_id, cb.c.branch_point_turn).join(
        up, cb.c.thread_id == up.c.parent_thread_id
    )
    up = up.union(step)
    rows = (await session.execute(select(up))).all()
    by_child = {r.thread_id: r for r in rows}
    out: list[LineageEntry] = []
    current: str | None = thread_id
    seen: set[str] = set()
    while current is not None and current not in seen:
        seen.add(current)
        row = by_child.get(current)
        if row is None:
            out.append(LineageEntry(current, None, 0))
            break
        out.append(LineageEntry(current, row.parent_thread_id, row.branch_point_turn))
        current = row.parent_thread_id
    return out


def visible_branch_clause() -> object:
    """Rows a user may see listed: roots, and branches whose status is active."""
    return or_(ConversationBranch.thread_id.is_(None), ConversationBranch.status == "active")


async def list_visible_for_user(
    session: AsyncSession, user_id: int
) -> list[tuple[Conversation, ConversationBranch | None]]:
    stmt = (
        select(Conversation, ConversationBranch)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .where(
            and_(
                Conversation.user_id == user_id,
                Conversation.deleted_at.is_(None),
                Conversation.building.is_(False),
                or_(
                    ConversationBranch.thread_id.is_(None),
                    ConversationBranch.status == "active",
                ),
            )
        )
        .order_by(Conversation.updated_at.desc(), Conversation.thread_id)
    )
    return [(c, b) for c, b in (await session.execute(stmt)).all()]


async def get_active_turn(session: AsyncSession, root_thread_id: str) -> ActiveTurn | None:
    return await session.get(ActiveTurn, root_thread_id)
