"""The path each user last chose in a family: one row per fork (and one for the end).

Queries and writes only; `services.history.chosen_path` owns the rules.
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import dialect_of
from haico.db.models import PathChoice
from haico.domain import now

_choice = PathChoice.__table__


async def choices(s: AsyncSession, *, user_id: int, root_thread_id: str) -> dict[str, str]:
    """fork node id -> chosen child node id, for one user and family."""
    rows = await s.execute(
        select(_choice.c.fork_node_id, _choice.c.child_node_id).where(
            _choice.c.user_id == user_id, _choice.c.root_thread_id == root_thread_id
        )
    )
    return {r.fork_node_id: r.child_node_id for r in rows.all()}


async def upsert(
    s: AsyncSession, *, user_id: int, root_thread_id: str, picks: Mapping[str, str]
) -> None:
    """Record each fork's chosen child, replacing an older choice (one statement)."""
    if not picks:
        return
    stamp = now()
    stmt = (
        dialect_of(s)
        .insert(_choice)
        .values(
            [
                {
                    "user_id": user_id,
                    "root_thread_id": root_thread_id,
                    "fork_node_id": fork,
                    "child_node_id": child,
                    "updated_at": stamp,
                }
                for fork, child in picks.items()
            ]
        )
    )
    stmt = stmt.on_conflict_do_update(
        index_elements=["user_id", "root_thread_id", "fork_node_id"],
        set_={"child_node_id": stmt.excluded.child_node_id, "updated_at": stamp},
    )
    await s.execute(stmt)
