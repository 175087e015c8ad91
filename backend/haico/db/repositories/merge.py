"""Queries and writes behind merges: artifact bodies, the merge records of a path, and
the record that makes a node a merge node. Services own the rules."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import (
    BigInteger,
    Boolean,
    Integer,
    String,
    any_,
    bindparam,
    delete,
    func,
    insert,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import Base, JsonType, table_of
from haico.db.dialect import Write, dialect_of
from haico.db.models import (
    Artifact,
    Preference,
    RejectedItem,
    Todo,
    WorkspaceEdit,
    WorkspaceSnapshot,
)
from haico.db.repositories import snapshots as snap_repo
from haico.domain import NodeKind, NodeState, now

_snap_t = table_of(WorkspaceSnapshot)


class ArtifactBody(NamedTuple):
    id: int
    kind: str
    title: str
    content: str


async def artifact_bodies(s: AsyncSession, ids: Collection[int]) -> dict[int, ArtifactBody]:
    """The artifacts `ids` with their content, by id (one query)."""
    if not ids:
        return {}
    stmt = select(Artifact.id, Artifact.kind, Artifact.title, Artifact.content).where(
        Artifact.id.in_(sorted(ids))
    )
    return {r.id: ArtifactBody(r.id, r.kind, r.title, r.content) for r in await s.execute(stmt)}


class MergeRecord(NamedTuple):
    thread_id: str
    turn_index: int
    kind: str
    merged_from: str


async def merged_state(s: AsyncSession, thread_id: str, turn_index: int) -> dict[str, Any] | None:
    """The source's workspace as the merge node `thread_id:turn_index` recorded it."""
    value = await s.scalar(
        select(_snap_t.c.merged_state).where(
            _snap_t.c.thread_id == thread_id, _snap_t.c.turn_index == turn_index
        )
    )
    return value if isinstance(value, dict) else None


async def merged_states(
    s: AsyncSession, thread_ids: Collection[str]
) -> dict[tuple[str, int], dict[str, Any]]:
    """The recorded source workspaces of the merge nodes of these threads (one query)."""
    if not thread_ids:
        return {}
    stmt = select(_snap_t.c.thread_id, _snap_t.c.turn_index, _snap_t.c.merged_state).where(
        dialect_of(s).one_of(_snap_t.c.thread_id, list(thread_ids)),
        _snap_t.c.merged_state.is_not(None),
    )
    return {(r[0], r[1]): r[2] for r in await s.execute(stmt) if isinstance(r[2], dict)}


async def notes_of(s: AsyncSession, nodes: Collection[tuple[str, int]]) -> list[str]:
    """The descriptions of the merge nodes among `nodes`, oldest turn first."""
    threads = {t for t, _ in nodes}
    if not threads:
        return []
    stmt = (
        select(_snap_t.c.thread_id, _snap_t.c.turn_index, _snap_t.c.user_message)
        .where(
            dialect_of(s).one_of(_snap_t.c.thread_id, list(threads)),
            _snap_t.c.merged_from.is_not(None),
        )
        .order_by(_snap_t.c.turn_index)
    )
    wanted = set(nodes)
    return [r[2] for r in await s.execute(stmt) if (r[0], r[1]) in wanted]


_MERGE_NODE = insert(_snap_t).values(
    {
        **{name: bindparam(f"sn_{name}") for name in snap_repo.SNAPSHOT_COLUMNS},
        "reply": "",
        "kind": bindparam("mn_kind"),
        "merged_from": bindparam("mn_from"),
        "merged_state": bindparam("mn_merged", type_=JsonType),
        "completed_at": bindparam("mn_at"),
    }
)


def merge_node(
    snapshot: Write,
    *,
    kind: NodeKind,
    merged_from: str,
    merged_state: dict[str, Any],
) -> Write:
    """A snapshot's INSERT (`snapshots.snapshot_write`) as the record of a complete
    merge node: the same row, written once with its kind, source and merged state."""
    statement, params = snapshot
    if statement is not snap_repo.SNAPSHOT_INSERT:
        raise ValueError("merge_node: give a snapshot_write")
    return _MERGE_NODE, {
        **params,
        "sn_state": NodeState.COMPLETE.value,
        "mn_kind": kind.value,
        "mn_from": merged_from,
        "mn_merged": merged_state,
        "mn_at": now(),
    }


_ITEM_FIELDS = {
    Preference: ("text", "locked", "position"),
    Todo: ("text", "done", "depth", "position"),
}
_ITEM_UPDATES = {
    model: update(table_of(model))
    .where(table_of(model).c.id == bindparam("iu_id"))
    .values({name: bindparam(f"iu_{name}") for name in fields})
    for model, fields in _ITEM_FIELDS.items()
}


async def update_items(
    s: AsyncSession, model: type[Preference] | type[Todo], rows: list[dict[str, Any]]
) -> None:
    """Set the fields (and position) of existing items, one row per dict (`id` and the
    model's fields), in one executemany."""
    if rows:
        params = [{f"iu_{k}": v for k, v in row.items()} for row in rows]
        await s.execute(_ITEM_UPDATES[model], params)


async def delete_items(
    s: AsyncSession, model: type[Preference] | type[Todo], ids: list[int]
) -> None:
    if ids:
        await s.execute(delete(model).where(model.id.in_(ids)))


async def withdraw_rejected(s: AsyncSession, thread_id: str, *, since: int) -> int:
    """Drop the thread's live rejected decisions stamped at turn `since` or later (a
    revert's); returns how many there were."""
    found = await s.execute(
        delete(RejectedItem).where(
            RejectedItem.thread_id == thread_id, RejectedItem.rejected_after_turn >= since
        )
    )
    return int(getattr(found, "rowcount", 0) or 0)


# PostgreSQL: the same changes as writes of arrays (one parameter per column, however
# many rows), for the statement that moves the head (`execute_all`'s rules: the
# deletes, updates and inserts of one table touch different rows).
_TYPES: dict[str, Any] = {
    "id": BigInteger(),
    "uid": String(),
    "surface": String(),
    "text": String(),
    "locked": Boolean(),
    "done": Boolean(),
    "depth": Integer(),
    "position": Integer(),
    "kind": String(),
}


def _arrays(prefix: str, columns: tuple[str, ...]) -> Any:
    """The rows of the array parameters `{prefix}_{column}`, as a derived table (with
    each row's place, `n`)."""
    return (
        func.unnest(*(bindparam(f"{prefix}_{c}", type_=ARRAY(_TYPES[c])) for c in columns))
        .table_valued(*columns, with_ordinality="n")
        .render_derived(name=prefix)
    )


def _insert_arrays(model: type[Base], prefix: str, columns: tuple[str, ...]) -> Any:
    """The INSERT of one row of `model` per element of the array parameters
    `{prefix}_{column}` (`columns`), in order; its other columns each from one
    parameter `{prefix}_{column}` (the same for every row)."""
    rows = _arrays(prefix, columns)
    table = table_of(model)
    scalars = [c for c in table.c if c.key not in columns and c.key != "id"]
    return insert(table).from_select(
        [*(c.key for c in scalars), *columns],
        select(
            *(bindparam(f"{prefix}_{c.key}", type_=c.type) for c in scalars),
            *(rows.c[c] for c in columns),
        ).order_by(rows.c.n),
    )


def _array_writes(model: type[Preference] | type[Todo]) -> tuple[Any, Any, Any]:
    table = table_of(model)
    p = "pa" if model is Preference else "ta"
    fields = _ITEM_FIELDS[model]
    changed = _arrays(f"{p}u", ("id", *fields))
    return (
        delete(table).where(table.c.id == any_(bindparam(f"{p}d_id", type_=ARRAY(BigInteger())))),
        update(table)
        .where(table.c.id == changed.c.id)
        .values({name: changed.c[name] for name in fields}),
        _insert_arrays(model, f"{p}i", ("uid", *fields)),
    )


_ARRAY_WRITES = {model: _array_writes(model) for model in (Preference, Todo)}


def item_writes(
    model: type[Preference] | type[Todo],
    thread_id: str,
    *,
    deletes: list[int],
    updates: list[dict[str, Any]],
    inserts: list[dict[str, Any]],
) -> list[Write]:
    """PostgreSQL: `delete_items`, `update_items` and the inserts of new items (each a
    dict of uid and the model's fields) as writes, only those with rows."""
    p = "pa" if model is Preference else "ta"
    fields = _ITEM_FIELDS[model]
    drop, change, add = _ARRAY_WRITES[model]
    writes: list[Write] = []
    if deletes:
        writes.append((drop, {f"{p}d_id": deletes}))
    if updates:
        writes.append((change, {f"{p}u_{c}": [r[c] for r in updates] for c in ("id", *fields)}))
    if inserts:
        params = {f"{p}i_{c}": [r[c] for r in inserts] for c in ("uid", *fields)}
        writes.append((add, {**params, f"{p}i_thread_id": thread_id}))
    return writes


_REJECTED_INSERT = _insert_arrays(RejectedItem, "rj", ("uid", "surface", "text"))


def rejected_write(thread_id: str, turn_index: int, rows: list[tuple[str, str, str]]) -> Write:
    """PostgreSQL: decisions rejected at `turn_index`, each (uid, surface, text)."""
    return _REJECTED_INSERT, {
        "rj_thread_id": thread_id,
        "rj_rejected_after_turn": turn_index,
        "rj_uid": [r[0] for r in rows],
        "rj_surface": [r[1] for r in rows],
        "rj_text": [r[2] for r in rows],
    }


# PostgreSQL: a node's edits as one INSERT of arrays, whatever their number (built once).
_EDITS_INSERT = _insert_arrays(WorkspaceEdit, "ed", ("surface", "uid", "kind"))


def edits_write(
    thread_id: str,
    turn_index: int,
    edits: list[tuple[str, str | None, str]],
    *,
    origin: str,
    author: str | None,
    at: datetime,
) -> Write:
    """PostgreSQL: the write (for `execute_all`) of node `thread_id:turn_index`'s edits,
    each (surface, uid, kind), in order."""
    return _EDITS_INSERT, {
        "ed_thread_id": thread_id,
        "ed_turn_index": turn_index,
        "ed_surface": [e[0] for e in edits],
        "ed_uid": [e[1] for e in edits],
        "ed_kind": [e[2] for e in edits],
        "ed_origin": origin,
        "ed_author": author,
        "ed_at": at,
    }
