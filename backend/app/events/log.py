"""The action log: append committed changes with a global, commit-ordered sequence.

Every append happens inside the caller's transaction, as its last write. On Postgres
it first takes a transaction-scoped advisory lock, so no two appending transactions
interleave: sequence numbers are handed out and committed in the same order. The
NOTIFY sent in the same transaction is delivered only at commit, which wakes the
fan-out of every process. SQLite transactions already hold the database write lock.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import delete, func, select, text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.dialect import dialect_of
from app.db.models import ActionLogEntry
from app.events import actions

NOTIFY_CHANNEL = "haico_events"
APPEND_LOCK_KEY = 0x6861_6963_6F00  # "haico"


def family_uuid(root_thread_id: str) -> str:
    return str(uuid.UUID(hex=root_thread_id.removeprefix("th_")))


def chat_channel(root_thread_id: str) -> str:
    return f"ahp-chat:/{family_uuid(root_thread_id)}"


def session_channel(root_thread_id: str) -> str:
    return f"ahp-session:/{family_uuid(root_thread_id)}"


async def append_many(
    session: AsyncSession,
    *,
    root_thread_id: str | None,
    channel: str,
    actions: list[dict[str, Any]],
) -> list[ActionLogEntry]:
    """Log several actions of one change, in order, with one INSERT."""
    postgres = dialect_of(session).is_postgres
    if postgres and not session.info.get("haico_append_lock"):
        await session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": APPEND_LOCK_KEY})
        session.info["haico_append_lock"] = True
    entries = [
        ActionLogEntry(root_thread_id=root_thread_id, channel=channel, action=a) for a in actions
    ]
    session.add_all(entries)
    await session.flush()
    if postgres and not session.info.get("haico_events"):
        # One wake-up per transaction is enough: listeners read the log from where
        # they are, and the notification is delivered only at commit.
        await session.execute(
            text("SELECT pg_notify(:c, :p)"), {"c": NOTIFY_CHANNEL, "p": str(entries[-1].seq)}
        )
    session.info["haico_events"] = True
    return entries


async def append_chat(
    session: AsyncSession, root_thread_id: str, *actions: dict[str, Any]
) -> list[ActionLogEntry]:
    """Log actions on the family's chat channel."""
    return await append_many(
        session,
        root_thread_id=root_thread_id,
        channel=chat_channel(root_thread_id),
        actions=list(actions),
    )


async def read_after(
    session: AsyncSession,
    *,
    after: int,
    root_thread_ids: set[str] | None = None,
    limit: int = 500,
) -> Sequence[ActionLogEntry]:
    stmt = select(ActionLogEntry).where(ActionLogEntry.seq > after)
    if root_thread_ids is not None:
        stmt = stmt.where(ActionLogEntry.root_thread_id.in_(root_thread_ids))
    return (await session.execute(stmt.order_by(ActionLogEntry.seq).limit(limit))).scalars().all()


async def read_before(
    session: AsyncSession, *, before: int | None, root_thread_id: str, limit: int = 500
) -> Sequence[ActionLogEntry]:
    """A family's entries below `before` (None: from the newest), newest first."""
    stmt = select(ActionLogEntry).where(ActionLogEntry.root_thread_id == root_thread_id)
    if before is not None:
        stmt = stmt.where(ActionLogEntry.seq < before)
    stmt = stmt.order_by(ActionLogEntry.seq.desc()).limit(limit)
    return (await session.execute(stmt)).scalars().all()


async def turn_text(session: AsyncSession, root_thread_id: str, turn_id: str) -> str:
    """The reply text a turn streamed so far, from its logged `chat/delta` actions."""
    stmt = (
        select(ActionLogEntry.action)
        .where(ActionLogEntry.root_thread_id == root_thread_id)
        .order_by(ActionLogEntry.seq)
    )
    parts = []
    for action in (await session.execute(stmt)).scalars():
        if action.get("type") == "chat/delta" and action.get("turnId") == turn_id:
            parts.append(str(action.get("content", "")))
    return "".join(parts)


async def bounds(session: AsyncSession) -> tuple[int, int]:
    """(smallest seq kept, largest seq) — (0, 0) for an empty log."""
    row = (
        await session.execute(select(func.min(ActionLogEntry.seq), func.max(ActionLogEntry.seq)))
    ).one()
    return int(row[0] or 0), int(row[1] or 0)


async def prune_before(session: AsyncSession, cutoff: datetime) -> int:
    """Drop entries older than the retention window; the newest entry is always kept."""
    _, newest = await bounds(session)
    result = await session.execute(
        delete(ActionLogEntry).where(
            ActionLogEntry.created_at < cutoff, ActionLogEntry.seq < newest
        )
    )
    return int(getattr(result, "rowcount", 0) or 0)


def envelope(entry: ActionLogEntry) -> dict[str, Any]:
    return {"channel": entry.channel, "action": entry.action, "serverSeq": entry.seq}


async def append_catalogue(
    session: AsyncSession, root_thread_id: str, thread_id: str, change: str, **extra: Any
) -> list[ActionLogEntry]:
    """A thread of the family was created, renamed or deleted (the session's catalogue)."""
    return await append_many(
        session,
        root_thread_id=root_thread_id,
        channel=session_channel(root_thread_id),
        actions=[actions.thread_changed(thread_id, change, **extra)],
    )


async def hold_appends(session: AsyncSession) -> None:
    """Keep appends out until this transaction ends, so what it reads and the log's
    newest `serverSeq` describe one moment (a snapshot and its `fromSeq`).

    Appenders take the advisory lock exclusively; readers share it. SQLite read
    transactions already hold the database lock from BEGIN.
    """
    if dialect_of(session).is_postgres:
        await session.execute(
            text("SELECT pg_advisory_xact_lock_shared(:k)"), {"k": APPEND_LOCK_KEY}
        )
