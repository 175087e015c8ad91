"""The action log: append committed changes with a global, commit-ordered sequence.

Every append happens inside the caller's transaction, as its last write. On Postgres
its first append takes a transaction-scoped advisory lock in the same statement, so
no two appending transactions interleave: sequence numbers are handed out and
committed in the same order. Every append NOTIFYs (delivered only at commit), which
wakes the fan-out of the other processes; its payload names the sending process
(`ORIGIN`), whose own fan-out was already told by the commit and skips it, the range
of `seq`s the append took and its families, so a process that follows none of them
moves past those entries without reading them (`events.bus`).
SQLite transactions already hold the database write lock.

The lock makes appending transactions queue one behind another, so writers that log
often batch: streamed text of every turn of a process goes in one transaction per
tick (`events.coalescer.DeltaLog`).

One piece on purpose: the append, its lock, the NOTIFY payload and the reads after a
position are one contract about the sequence; each part is only right with the others.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Integer,
    Select,
    String,
    Text,
    bindparam,
    case,
    cast,
    delete,
    func,
    insert,
    literal,
    literal_column,
    select,
    text,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import UpdateBase

from haico.db.base import json_text, table_of
from haico.db.dialect import GUARDS, MOVED_MARK, Write, dialect_of, execute_all, merged_params
from haico.db.driver import Driver, fetch_in_session
from haico.db.engine import APPENDED, AUTOCOMMIT
from haico.db.models import ActionLogEntry
from haico.domain import LoggedAction
from haico.events import actions

# Who makes the current request's changes (user id, name), set by the faces' auth
# (REST's dependency, an AHP connection): catalogue actions name their author, and a
# workspace edit in a family the caller does not own names it (`services.workspace.live_edit`).
CALLER: ContextVar[tuple[int, str] | None] = ContextVar("haico_caller", default=None)


def grantee(owner_id: int) -> str | None:
    """The request's caller's name when it is not `owner_id`, the family's owner (a
    grantee of a shared family: its turns, checkouts, merges and edits name it); None
    for the owner, and where no request names a caller (jobs, the CLI)."""
    caller = CALLER.get()
    return caller[1] if caller is not None and caller[0] != owner_id else None


NOTIFY_CHANNEL = "haico_events"
APPEND_LOCK_KEY = 0x6861_6963_6F00  # "haico"
# This process, as named in the payload of its NOTIFYs (see the module doc).
ORIGIN = uuid.uuid4().hex


# A NOTIFY names the families it is about, up to this many; more (or an entry of no
# family) and it says `*` (a payload holds at most 8000 bytes).
NOTIFY_FAMILIES = 100


def notify_payload(origin: str, lo: int, hi: int, families: str) -> str:
    """`origin lo hi families`: the sending process, the range of `seq`s its append
    took, and the families of those entries (comma-separated, or `*`)."""
    return f"{origin} {lo} {hi} {families}"


@dataclass(frozen=True)
class Notice:
    """A parsed NOTIFY payload (see `notify_payload`); `families` None means any."""

    origin: str
    lo: int
    hi: int
    families: frozenset[str] | None


def parse_notice(payload: str) -> Notice | None:
    """None for a payload of another form (wake up and read, to be safe)."""
    parts = payload.split(" ")
    if len(parts) != 4 or not parts[1].isdigit() or not parts[2].isdigit():
        return None
    families = None if parts[3] == "*" else frozenset(parts[3].split(","))
    return Notice(parts[0], int(parts[1]), int(parts[2]), families)


def _families(roots: Sequence[str | None]) -> str:
    distinct = set(roots)
    if None in distinct or len(distinct) > NOTIFY_FAMILIES:
        return "*"
    return ",".join(sorted(r for r in distinct if r is not None))


# PostgreSQL: an append in one round trip. The first append of a transaction takes the
# global append lock (`lock`) in a one-row CTE joined to the rows, so it is taken
# before the first row exists to be numbered; rows are inserted in the order given
# (sorted by their position), so their `seq`s ascend in that order. Every append
# NOTIFYs with the range of `seq`s it took and its families, computed from the
# inserted rows (delivered at commit). Writes the caller hands over (`after`) go in
# the same statement as CTEs that the lock's row is computed from: they run to the end
# first, so a row lock they wait for is never waited for while holding the append
# lock (which the holder of that row lock may want next).
_log = table_of(ActionLogEntry)


@lru_cache(maxsize=64)
def _append(writes: tuple[UpdateBase, ...], *, lock: bool) -> Select[Any]:
    ctes = [w.returning(literal_column("1")).cte(f"w{i}") for i, w in enumerate(writes)]
    first = select(
        func.pg_advisory_xact_lock(bindparam("al_key", type_=BigInteger()))
        if lock
        else literal_column("1")
    )
    counts = [
        select(func.count().label("n")).select_from(c).subquery(f"c{i}") for i, c in enumerate(ctes)
    ]
    for write, count in zip(writes, counts, strict=True):
        if write in GUARDS:
            # Exactly one row, or a cast that fails with the mark in its message.
            first = first.add_columns(
                cast(case((count.c.n == 1, "1"), else_=literal(MOVED_MARK)), Integer)
            )
    if counts:
        # One row of counts, joined on TRUE (a cross join of one-row results).
        joined = counts[0]
        for more in counts[1:]:
            joined = joined.join(more, true())  # type: ignore[assignment]
        first = first.select_from(joined)
    before = first.cte("l").prefix_with("MATERIALIZED")
    rows = (
        func.unnest(
            bindparam("al_roots", type_=ARRAY(String())),
            bindparam("al_channels", type_=ARRAY(String())),
            bindparam("al_actions", type_=ARRAY(Text())),
        )
        .table_valued("r", "ch", "a", with_ordinality="n")
        .render_derived(name="v")
    )
    inserted = (
        insert(_log)
        .from_select(
            ["root_thread_id", "channel", "action"],
            select(rows.c.r, rows.c.ch, cast(rows.c.a, JSONB))
            .select_from(before.join(rows, true()))
            .order_by(rows.c.n),
        )
        .returning(_log.c.seq)
        .cte("ins")
    )
    notified = (
        select(
            func.pg_notify(
                bindparam("al_channel", type_=String()),
                func.concat_ws(
                    " ",
                    bindparam("al_origin", type_=String()),
                    func.min(inserted.c.seq),
                    func.max(inserted.c.seq),
                    bindparam("al_families", type_=String()),
                ),
            )
        )
        .select_from(inserted)
        .cte("n")
    )
    return select(inserted.c.seq).select_from(inserted.join(notified, true()))


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
) -> list[LoggedAction]:
    """Log several actions of one change, in order, with one INSERT."""
    return await append_rows(session, [(root_thread_id, channel, a) for a in actions])


async def append_rows(
    session: AsyncSession,
    rows: list[tuple[str | None, str, dict[str, Any]]],
    *,
    after: Sequence[Write] = (),
) -> list[LoggedAction]:
    """Log (family root, channel, action) rows, in order, with one INSERT; first run
    the independent writes `after` (as `execute_all` would), in the same statement on
    PostgreSQL when this is the transaction's first append.

    The entries returned carry their `seq`."""
    if not rows:
        await execute_all(session, *after)
        return []
    if dialect_of(session).is_postgres:
        # The notification is delivered only at commit.
        lock = not session.info.get("haico_append_lock")
        append, params = _pg_append(rows, after, lock=lock)
        fetched = await fetch_in_session(session, append, params)
        if fetched is None:
            fetched = (await session.execute(append, params)).all()
        seqs = sorted(r[0] for r in fetched)
        session.info["haico_append_lock"] = True
    else:
        await execute_all(session, *after)
        values = [{"root_thread_id": r, "channel": c, "action": a} for r, c, a in rows]
        stmt = insert(ActionLogEntry).returning(ActionLogEntry.seq, sort_by_parameter_order=True)
        seqs = list((await session.execute(stmt, values)).scalars().all())
    entries = _entries(seqs, rows)
    session.info.setdefault(APPENDED, []).extend(entries)
    return entries


def _pg_append(
    rows: list[tuple[str | None, str, dict[str, Any]]], after: Sequence[Write], *, lock: bool
) -> tuple[Select[Any], dict[str, Any]]:
    """The PostgreSQL statement that appends `rows` after the writes `after`, and its
    parameters."""
    params = merged_params(after)
    params.update(
        al_key=APPEND_LOCK_KEY,
        al_channel=NOTIFY_CHANNEL,
        al_origin=ORIGIN,
        al_families=_families([r for r, _, _ in rows]),
        al_roots=[r for r, _, _ in rows],
        al_channels=[c for _, c, _ in rows],
        al_actions=[json_text(a) for _, _, a in rows],
    )
    return _append(tuple(w for w, _ in after), lock=lock), params


def _entries(
    seqs: Sequence[int], rows: list[tuple[str | None, str, dict[str, Any]]]
) -> list[LoggedAction]:
    return [LoggedAction(seq, r, c, a) for seq, (r, c, a) in zip(seqs, rows, strict=True)]


async def append_chat_now(
    driver: Driver, root_thread_id: str, *actions: dict[str, Any], after: Sequence[Write]
) -> list[LoggedAction]:
    """PostgreSQL: `append_chat` as one statement run on the driver (`Database.driver`),
    committed when it returns."""
    channel = chat_channel(root_thread_id)
    rows: list[tuple[str | None, str, dict[str, Any]]] = [
        (root_thread_id, channel, a) for a in actions
    ]
    append, params = _pg_append(rows, after, lock=True)
    entries = _entries(sorted(r[0] for r in await driver.fetch(append, params)), rows)
    driver.appended.extend(entries)
    return entries


async def append_chat(
    session: AsyncSession,
    root_thread_id: str,
    *actions: dict[str, Any],
    after: Sequence[Write] = (),
) -> list[LoggedAction]:
    """Log actions on the family's chat channel (after the writes `after`, as
    `append_rows`)."""
    channel = chat_channel(root_thread_id)
    return await append_rows(session, [(root_thread_id, channel, a) for a in actions], after=after)


async def read_after(
    session: AsyncSession,
    *,
    after: int,
    root_thread_ids: set[str] | None = None,
    limit: int = 500,
) -> list[LoggedAction]:
    """Entries with seq > `after` (of the families `root_thread_ids`, None: every
    entry), oldest first, at most `limit`."""
    stmt = select(_log.c.seq, _log.c.root_thread_id, _log.c.channel, _log.c.action).where(
        _log.c.seq > after
    )
    if root_thread_ids is not None:
        stmt = stmt.where(_log.c.root_thread_id.in_(root_thread_ids))
    rows = await session.execute(stmt.order_by(_log.c.seq).limit(limit))
    return [LoggedAction(*row) for row in rows]


async def read_before(
    session: AsyncSession, *, before: int | None, root_thread_id: str, limit: int = 500
) -> Sequence[ActionLogEntry]:
    """A family's entries below `before` (None: from the newest), newest first."""
    stmt = select(ActionLogEntry).where(ActionLogEntry.root_thread_id == root_thread_id)
    if before is not None:
        stmt = stmt.where(ActionLogEntry.seq < before)
    stmt = stmt.order_by(ActionLogEntry.seq.desc()).limit(limit)
    return (await session.execute(stmt)).scalars().all()


async def turn_logged(session: AsyncSession, root_thread_id: str, turn_id: str) -> tuple[str, int]:
    """What the log holds of a turn: the reply text it streamed (its `chat/delta`
    actions) and the number of tool calls it made (its tool-call response parts)."""
    stmt = (
        select(ActionLogEntry.action)
        .where(ActionLogEntry.root_thread_id == root_thread_id)
        .order_by(ActionLogEntry.seq)
    )
    parts = []
    calls = 0
    for action in (await session.execute(stmt)).scalars():
        if action.get("turnId") != turn_id:
            continue
        if action.get("type") == "chat/delta":
            parts.append(str(action.get("content", "")))
        elif action.get("type") == "chat/responsePart":
            calls += (action.get("part") or {}).get("kind") == "toolCall"
    return "".join(parts), calls


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


def envelope(entry: LoggedAction) -> dict[str, Any]:
    return {"channel": entry.channel, "action": entry.action, "serverSeq": entry.seq}


async def append_catalogue(
    session: AsyncSession, root_thread_id: str, thread_id: str, change: str, **extra: Any
) -> list[LoggedAction]:
    """A thread of the family was created, renamed or deleted (the session's catalogue),
    with its author when a request names one (`CALLER`)."""
    return await append_rows(session, [catalogue_row(root_thread_id, thread_id, change, **extra)])


def catalogue_row(
    root_thread_id: str, thread_id: str, change: str, **extra: Any
) -> tuple[str, str, dict[str, Any]]:
    """`append_catalogue`'s row, for a caller that appends it with others."""
    caller = CALLER.get()
    if caller is not None:
        extra.setdefault("author", caller[1])
    action = actions.thread_changed(thread_id, change, **extra)
    return root_thread_id, session_channel(root_thread_id), action


async def hold_appends(session: AsyncSession) -> None:
    """Keep appends out until this transaction ends, so what it reads and the log's
    newest `serverSeq` describe one moment (a snapshot and its `fromSeq`).

    Appenders take the advisory lock exclusively; readers share it. SQLite read
    transactions already hold the database lock from BEGIN.
    """
    if dialect_of(session).is_postgres:
        if session.info.get(AUTOCOMMIT):
            # The lock would end with its own statement.
            raise RuntimeError("hold_appends needs a transaction: db.read(held=True)")
        await session.execute(
            text("SELECT pg_advisory_xact_lock_shared(:k)"), {"k": APPEND_LOCK_KEY}
        )
