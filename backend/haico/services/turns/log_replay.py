"""The action log read back: its newest position, and what it holds after a position
for some families (a follower's replay), alone or with the position it stands at.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.events import log as action_log


async def log_position(db: Database) -> int:
    async with db.read() as s:
        return (await action_log.bounds(s))[1]


async def replay(
    db: Database, *, after: int, root_thread_ids: set[str]
) -> list[tuple[int, str, dict[str, Any]]] | None:
    """Logged (seq, channel, action) after `after` for these families, or None when the
    log no longer reaches back that far (the client then needs snapshots)."""
    async with db.read() as s:
        found = await _replay_in(s, after=after, root_thread_ids=root_thread_ids)
    return None if found is None else found[0]


async def replay_to_now(
    db: Database, *, after: int, root_thread_ids: set[str]
) -> tuple[list[tuple[int, str, dict[str, Any]]], int] | None:
    """`replay`, with the log's newest `serverSeq` at the moment it was read (appends
    held out meanwhile): a follower that goes on live from that position misses
    nothing appended while the replay was read, and gets nothing twice."""
    async with db.read(held=True) as s:
        await action_log.hold_appends(s)
        return await _replay_in(s, after=after, root_thread_ids=root_thread_ids)


async def _replay_in(
    s: AsyncSession, *, after: int, root_thread_ids: set[str]
) -> tuple[list[tuple[int, str, dict[str, Any]]], int] | None:
    oldest, newest = await action_log.bounds(s)
    if after < oldest - 1 and newest > 0:
        return None
    out: list[tuple[int, str, dict[str, Any]]] = []
    cursor = after
    while True:
        page = await action_log.read_after(
            s, after=cursor, root_thread_ids=root_thread_ids, limit=2000
        )
        for e in page:
            cursor = e.seq
            out.append((e.seq, e.channel, e.action))
        if len(page) < 2000:
            return out, newest
