"""Snapshots (turn records): read, write, copy their items out, delete, and node state.

A snapshot row is also the record of its turn (user message, reply, state), so the
node state lives here too. Hand-written SQL is kept as named constants.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, delete, func, insert, inspect, null, select, text, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from haico.db.base import table_of
from haico.db.dialect import Write, dialect_of
from haico.db.driver import entity, fetch_in_session, labelled
from haico.db.models import Artifact, SearchEntry, WorkspaceSnapshot
from haico.db.repositories import ledger as ledger_repo
from haico.domain import NodeState

# Copy a snapshot's item lists (JSON) into a thread's live rows, positions by index
# (on PostgreSQL both lists in one statement).
COPY_ITEMS_SQL = {
    "postgresql": (
        "WITH p AS (INSERT INTO preferences (uid, thread_id, text, locked, position) "
        "SELECT e->>'uid', :t, e->>'text', COALESCE((e->>'locked')::boolean, false), o - 1 "
        "FROM workspace_snapshots s, "
        "jsonb_array_elements(s.preferences) WITH ORDINALITY AS x(e, o) WHERE s.id = :sid) "
        "INSERT INTO todos (uid, thread_id, text, done, depth, position) "
        "SELECT e->>'uid', :t, e->>'text', COALESCE((e->>'done')::boolean, false), "
        "COALESCE((e->>'depth')::int, 0), o - 1 "
        "FROM workspace_snapshots s, jsonb_array_elements(s.todos) WITH ORDINALITY AS x(e, o) "
        "WHERE s.id = :sid",
    ),
    "sqlite": (
        "INSERT INTO preferences (uid, thread_id, text, locked, position) "
        "SELECT json_extract(j.value, '$.uid'), :t, json_extract(j.value, '$.text'), "
        "COALESCE(json_extract(j.value, '$.locked'), 0), CAST(j.key AS INTEGER) "
        "FROM workspace_snapshots s, json_each(s.preferences) j WHERE s.id = :sid",
        "INSERT INTO todos (uid, thread_id, text, done, depth, position) "
        "SELECT json_extract(j.value, '$.uid'), :t, json_extract(j.value, '$.text'), "
        "COALESCE(json_extract(j.value, '$.done'), 0), "
        "COALESCE(json_extract(j.value, '$.depth'), 0), CAST(j.key AS INTEGER) "
        "FROM workspace_snapshots s, json_each(s.todos) j WHERE s.id = :sid",
    ),
}


# PostgreSQL: a draft thread restored from a snapshot in one statement: its thread and
# branch rows, the document (pointing at the snapshot's stored body), preferences and
# todos out of the snapshot's JSON (`COPY_ITEMS_SQL`), the rejected decisions given
# (`:rejected`, a JSON list, in order) and the artifacts of the source thread up to the
# restored turn. The foreign keys between these rows are checked at the end of the
# statement, when all of them exist.
DRAFT_FROM_SNAPSHOT_SQL = (
    "WITH c AS (INSERT INTO conversations (thread_id, user_id, root_thread_id, title, "
    "objective, turn_index, message_count, created_at, updated_at, building) "
    "VALUES (:t, :user_id, :root, :title, :objective, :turn, :messages, :stamp, :stamp, false)), "
    "b AS (INSERT INTO conversation_branches (thread_id, parent_thread_id, branch_point_turn, "
    "status, dirty, created_at) VALUES (:t, :parent, :turn, 'draft', false, :stamp)), "
    "d AS (INSERT INTO documents (thread_id, title, content, body_hash) "
    "SELECT :t, COALESCE(s.document_title, ''), '', s.document_hash "
    "FROM workspace_snapshots s WHERE s.id = :sid "
    "AND (s.document_title IS NOT NULL OR s.document_hash IS NOT NULL)), "
    "r AS (INSERT INTO rejected_items (thread_id, uid, surface, text, rejected_after_turn) "
    "SELECT :t, e->>'uid', e->>'surface', e->>'text', (e->>'rejected_after_turn')::int "
    "FROM jsonb_array_elements(CAST(:rejected AS jsonb)) WITH ORDINALITY AS x(e, o) ORDER BY o), "
    "a AS (INSERT INTO artifacts (thread_id, turn_index, uid, kind, title, content, created_at) "
    "SELECT :t, turn_index, uid, kind, title, content, created_at FROM artifacts "
    "WHERE thread_id = :source AND turn_index <= :turn ORDER BY id), "
    + COPY_ITEMS_SQL["postgresql"][0].removeprefix("WITH ")
)


async def get_snapshot(
    s: AsyncSession, thread_id: str, turn_index: int, *, light: bool = False
) -> WorkspaceSnapshot | None:
    """One snapshot row; `light` leaves its preference and todo lists unloaded (see
    `load_items`). The rejected list is short and a restore reads it, so it comes with
    the row (one round trip less than loading it after)."""
    params = {"gs_thread": thread_id, "gs_turn": turn_index}
    if not light:
        # The whole row is read on the session's connection where it can (its item
        # lists cost SQLAlchemy's ORM more than the database): a detached instance.
        rows = await fetch_in_session(s, _SNAPSHOT_ROW, params)
        if rows is not None:
            return entity(WorkspaceSnapshot, rows[0], "") if rows else None
    found = await s.execute(_SNAPSHOT_LIGHT if light else _SNAPSHOT, params)
    return found.scalar_one_or_none()


# Built once.
_SNAPSHOT = select(WorkspaceSnapshot).where(
    WorkspaceSnapshot.thread_id == bindparam("gs_thread"),
    WorkspaceSnapshot.turn_index == bindparam("gs_turn"),
)
_SNAPSHOT_LIGHT = _SNAPSHOT.options(
    defer(WorkspaceSnapshot.preferences), defer(WorkspaceSnapshot.todos)
)
# The columns `_SNAPSHOT` loads (a merge node's recorded state is deferred: NULL here).
_SNAPSHOT_ROW = select(
    *(
        null().label(c.key) if c.key == "merged_state" else c
        for c in labelled(WorkspaceSnapshot, "")
    )
).where(
    table_of(WorkspaceSnapshot).c.thread_id == bindparam("gs_thread"),
    table_of(WorkspaceSnapshot).c.turn_index == bindparam("gs_turn"),
)


async def get_snapshots(
    s: AsyncSession, thread_id: str, turns: list[int]
) -> dict[int, WorkspaceSnapshot | None]:
    """Light snapshot rows (as `get_snapshot(light=True)`) of several turns of a thread
    in one query, by turn; None for a turn that has none."""
    stmt = (
        select(WorkspaceSnapshot)
        .where(WorkspaceSnapshot.thread_id == thread_id, WorkspaceSnapshot.turn_index.in_(turns))
        .options(defer(WorkspaceSnapshot.preferences), defer(WorkspaceSnapshot.todos))
    )
    found = {snap.turn_index: snap for snap in (await s.execute(stmt)).scalars()}
    return {turn: found.get(turn) for turn in turns}


async def load_items(
    s: AsyncSession,
    snap: WorkspaceSnapshot,
    items: frozenset[str] = frozenset({"preferences", "todos", "rejected"}),
) -> None:
    """Load a light snapshot's item lists, or only those named in `items` (async
    sessions cannot load them on access)."""
    unloaded = inspect(snap).unloaded & items
    if unloaded:
        await s.refresh(snap, attribute_names=sorted(unloaded))


async def has_snapshot_after(s: AsyncSession, thread_id: str, turn: int) -> bool:
    found = await s.scalar(
        select(WorkspaceSnapshot.turn_index)
        .where(WorkspaceSnapshot.thread_id == thread_id, WorkspaceSnapshot.turn_index > turn)
        .limit(1)
    )
    return found is not None


async def last_kept_turn(s: AsyncSession, thread_id: str, *, from_turn: int) -> int | None:
    """The newest turn record of the thread at or after `from_turn`."""
    return await s.scalar(
        select(func.max(WorkspaceSnapshot.turn_index)).where(
            WorkspaceSnapshot.thread_id == thread_id, WorkspaceSnapshot.turn_index >= from_turn
        )
    )


async def copy_items_into(s: AsyncSession, snap: WorkspaceSnapshot, target: str) -> None:
    for sql in COPY_ITEMS_SQL[dialect_of(s).name]:
        await s.execute(text(sql), {"t": target, "sid": snap.id})


async def insert_draft_from_snapshot(
    s: AsyncSession,
    snap: WorkspaceSnapshot,
    *,
    thread_id: str,
    user_id: int,
    root_thread_id: str,
    title: str,
    objective: str | None,
    parent_thread_id: str,
    turn: int,
    rejected: list[dict[str, Any]],
    stamp: datetime,
) -> None:
    """PostgreSQL only: `DRAFT_FROM_SNAPSHOT_SQL` (the draft at `turn` of
    `parent_thread_id`, its workspace out of `snap`)."""
    await s.execute(
        text(DRAFT_FROM_SNAPSHOT_SQL),
        {
            "t": thread_id,
            "user_id": user_id,
            "root": root_thread_id,
            "title": title,
            "objective": objective,
            "turn": turn,
            "messages": 2 * turn,
            "stamp": stamp,
            "parent": parent_thread_id,
            "sid": snap.id,
            "rejected": json.dumps(rejected),
            "source": snap.thread_id,
        },
    )


async def set_node_state(
    s: AsyncSession,
    thread_id: str,
    turn_index: int,
    *,
    state: NodeState,
    completed_at: datetime,
    reply: str | None = None,
    only_if: NodeState | None = None,
) -> None:
    """End a turn record: its state, when, and (if given) its reply; `only_if` limits
    it to a record still in that state."""
    stmt = update(WorkspaceSnapshot).where(
        WorkspaceSnapshot.thread_id == thread_id, WorkspaceSnapshot.turn_index == turn_index
    )
    if only_if is not None:
        stmt = stmt.where(WorkspaceSnapshot.state == only_if)
    values: dict[str, object] = {"state": state, "completed_at": completed_at}
    if reply is not None:
        values["reply"] = reply
    await s.execute(stmt.values(**values))


SNAPSHOT_COLUMNS = (
    "thread_id",
    "turn_index",
    "format",
    "objective",
    "document_title",
    "document_hash",
    "preferences",
    "todos",
    "rejected",
    "user_message",
    "state",
    "author",
)
_snap_t = table_of(WorkspaceSnapshot)
# A new snapshot has no reply yet: given here, not left to the column's Python-side
# default, so the statement also runs on the driver directly (`haico.db.driver`).
SNAPSHOT_INSERT = insert(_snap_t).values(
    {**{name: bindparam(f"sn_{name}") for name in SNAPSHOT_COLUMNS}, "reply": ""}
)


def snapshot_write(**columns: Any) -> Write:
    """The INSERT of a snapshot row with exactly these columns (`SNAPSHOT_COLUMNS`),
    as a write for `execute_all`."""
    if set(columns) != set(SNAPSHOT_COLUMNS):
        raise ValueError(f"snapshot_write: give exactly {SNAPSHOT_COLUMNS}")
    return SNAPSHOT_INSERT, {f"sn_{name}": value for name, value in columns.items()}


_NODE_END = (
    update(_snap_t)
    .where(
        _snap_t.c.thread_id == bindparam("ne_thread"),
        _snap_t.c.turn_index == bindparam("ne_turn"),
    )
    .values(
        state=bindparam("ne_state"),
        completed_at=bindparam("ne_at"),
        reply=bindparam("ne_reply"),
    )
)


def node_end(
    thread_id: str, turn_index: int, *, state: NodeState, completed_at: datetime, reply: str
) -> Write:
    """`set_node_state` with a reply, as a write for `execute_all`."""
    return _NODE_END, {
        "ne_thread": thread_id,
        "ne_turn": turn_index,
        "ne_state": state.value,
        "ne_at": completed_at,
        "ne_reply": reply,
    }


async def delete_nodes(s: AsyncSession, thread_id: str, turns: Iterable[int]) -> None:
    """Drop the turn records, the artifacts, the search entries and the research
    ledger's rows (provenance, edits, notes) of these turns."""
    ks = list(turns)
    await ledger_repo.delete_at(s, thread_id, ks)
    await s.execute(
        delete(SearchEntry).where(
            SearchEntry.thread_id == thread_id, SearchEntry.turn_index.in_(ks)
        )
    )
    await s.execute(
        delete(WorkspaceSnapshot).where(
            WorkspaceSnapshot.thread_id == thread_id, WorkspaceSnapshot.turn_index.in_(ks)
        )
    )
    await s.execute(
        delete(Artifact).where(Artifact.thread_id == thread_id, Artifact.turn_index.in_(ks))
    )


async def node_records(s: AsyncSession, thread_ids: list[str]) -> list[WorkspaceSnapshot]:
    """Every turn record of these threads, light (no item lists), by thread and turn."""
    stmt = (
        select(WorkspaceSnapshot)
        .where(WorkspaceSnapshot.thread_id.in_(thread_ids))
        .options(
            defer(WorkspaceSnapshot.preferences),
            defer(WorkspaceSnapshot.todos),
            defer(WorkspaceSnapshot.rejected),
        )
        .order_by(WorkspaceSnapshot.thread_id, WorkspaceSnapshot.turn_index)
    )
    return list((await s.execute(stmt)).scalars().all())
