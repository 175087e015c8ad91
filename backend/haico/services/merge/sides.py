"""The three workspace states of a merge, read from storage: base, ours and theirs.

`theirs` is the workspace after the source node. For a pick, `base` is the workspace
after the source's parent (so the plan is the change the source itself made); for a
merge, it is the workspace after the newest node the source's path shares with the
target's, or, when an earlier merge into the target brought in a newer node of the
source's path, the source's workspace as that merge recorded it (as a version-control
merge base moves once a branch has been merged), unless a revert node on the target's
path undid that merge. `ours` is the target thread's live workspace. Every as-of read goes through
`snapshots.resolve_restore_state`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Conversation
from haico.db.repositories import lineage as lineage_repo
from haico.db.repositories import live as live_repo
from haico.db.repositories import merge as repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import workspace as ws_repo
from haico.db.repositories.live import LiveRows
from haico.domain import NodeId, NodeKind
from haico.errors import InvalidTurn, SnapshotMissing
from haico.schemas.export import (
    ExportMergeBase,
    ExportMergedArtifact,
    ExportPreference,
    ExportTodo,
)
from haico.schemas.merge import MergeMode
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.compare.nodes import common_ancestor, node_path
from haico.services.families.conversations import check_for, get_for
from haico.services.families.model import Lineage
from haico.services.merge.plan import EMPTY, ArtifactRef, Item, Side, artifact_key
from haico.services.workspace.snapshots import as_of, resolve_restore_state
from haico.services.workspace.state import WorkspaceState, state_of_rows


@dataclass
class Sides:
    base: Side
    ours: Side
    theirs: Side
    base_node: NodeId | None
    target_node: NodeId | None
    # What `ours` was read from (the apply captures it as the merge node's snapshot).
    ours_state: WorkspaceState
    ours_rows: live_repo.LiveRows
    # The source node's thread (read with its ownership check).
    source_conv: Conversation


async def side_of(s: AsyncSession, state: WorkspaceState) -> Side:
    """A workspace state as the planner sees it (artifacts known by uid)."""
    bodies = await repo.artifact_bodies(s, [a.id for a in state.artifacts])
    artifacts = tuple(
        ArtifactRef(a.uid, b.kind, b.title, b.id, artifact_key(b.kind, b.title, b.content))
        for a in state.artifacts
        if (b := bodies.get(a.id)) is not None
    )
    doc = state.document
    return Side(
        objective=state.objective,
        title=doc.title if doc is not None else None,
        content=doc.content if doc is not None else None,
        preferences=tuple(
            Item(p.uid, {"text": p.text, "locked": p.locked}) for p in state.preferences
        ),
        todos=tuple(
            Item(t.uid, {"text": t.text, "done": t.done, "depth": t.depth}) for t in state.todos
        ),
        artifacts=artifacts,
        rejected=frozenset(r.uid for r in state.rejected),
    )


async def _state_after(s: AsyncSession, node: NodeId, bare: set[str]) -> WorkspaceState:
    conv = await threads_repo.get_thread(s, node.thread_id)
    if conv is None or conv.deleted_at is not None:
        raise SnapshotMissing(f"node {node} is no longer retained")
    return await resolve_restore_state(s, conv, node.turn, bare=bare)


@dataclass(frozen=True)
class _Base:
    """Where a merge starts from: a node's workspace, or (`recorded`) the source's
    workspace as an earlier merge brought it in."""

    node: NodeId | None
    recorded: dict[str, Any] | None = None


async def _merge_base(
    s: AsyncSession,
    source_path: list[NodeId],
    target_path: list[NodeId],
    records: list[repo.MergeRecord],
) -> _Base:
    """The newest state of the source's path that the target already holds: the shared
    ancestor's, or the one an earlier merge into the target brought in from a node of
    the source's path (recorded then: a node's workspace may change while it is its
    thread's latest, by the snapshot rule). `records`: the merge records of (at least)
    the target path's threads."""
    shared = common_ancestor(source_path, target_path)
    on_source = {n: i for i, n in enumerate(source_path)}
    best = on_source.get(shared, -1) if shared is not None else -1
    chosen: repo.MergeRecord | None = None
    on_target = set(target_path)
    # A merge undone on the target's path (a revert node names it) brought nothing.
    reverted = {
        r.merged_from
        for r in records
        if r.kind == NodeKind.REVERT and NodeId(r.thread_id, r.turn_index) in on_target
    }
    for r in records:
        merged = NodeId.parse(r.merged_from)
        node = NodeId(r.thread_id, r.turn_index)
        if r.kind != NodeKind.MERGE or node not in on_target or str(node) in reverted:
            continue
        if merged is not None and on_source.get(merged, -1) > best:
            best, chosen = on_source[merged], r
    if chosen is not None:
        recorded = await repo.merged_state(s, chosen.thread_id, chosen.turn_index)
        if recorded is not None:
            return _Base(NodeId.parse(chosen.merged_from), recorded)
    return _Base(shared)


def recorded_state(theirs: Side, document_hash: str | None) -> dict[str, Any]:
    """What a merge node keeps of the source's workspace (`_merge_base`)."""
    return {
        "objective": theirs.objective,
        "title": theirs.title,
        "document_hash": document_hash,
        "preferences": [{"uid": i.uid, **i.values} for i in theirs.preferences],
        "todos": [{"uid": i.uid, **i.values} for i in theirs.todos],
        "artifacts": [
            {"uid": a.key, "kind": a.kind, "title": a.title, "digest": a.digest}
            for a in theirs.artifacts
        ],
    }


def base_export(side: Side) -> ExportMergeBase:
    """A recorded merge base (`recorded_side`) as the family export carries it."""
    return ExportMergeBase(
        objective=side.objective,
        title=side.title,
        content=side.content,
        preferences=[ExportPreference(uid=i.uid, **i.values) for i in side.preferences],
        todos=[ExportTodo(uid=i.uid, **i.values) for i in side.todos],
        artifacts=[
            ExportMergedArtifact(uid=a.key, kind=a.kind, title=a.title, digest=a.digest)
            for a in side.artifacts
        ],
    )


def base_import(base: ExportMergeBase) -> Side:
    """An exported merge base as a side (`recorded_state` makes it a record again)."""
    return Side(
        objective=base.objective,
        title=base.title,
        content=base.content,
        preferences=tuple(
            Item(p.uid, {"text": p.text, "locked": p.locked}) for p in base.preferences
        ),
        todos=tuple(
            Item(t.uid, {"text": t.text, "done": t.done, "depth": t.depth}) for t in base.todos
        ),
        artifacts=tuple(
            ArtifactRef(a.uid, a.kind, a.title, None, a.digest) for a in base.artifacts
        ),
    )


async def recorded_side(s: AsyncSession, state: dict[str, Any]) -> Side:
    digest = state.get("document_hash")
    body = await ws_repo.get_body(s, digest) if digest else None
    return Side(
        objective=state.get("objective"),
        title=state.get("title"),
        content=body,
        preferences=tuple(
            Item(str(p["uid"]), {"text": p.get("text", ""), "locked": bool(p.get("locked"))})
            for p in state.get("preferences") or []
        ),
        todos=tuple(
            Item(
                str(t["uid"]),
                {
                    "text": t.get("text", ""),
                    "done": bool(t.get("done")),
                    "depth": int(t.get("depth") or 0),
                },
            )
            for t in state.get("todos") or []
        ),
        artifacts=tuple(
            ArtifactRef(str(a["uid"]), str(a["kind"]), str(a["title"]), None, str(a["digest"]))
            for a in state.get("artifacts") or []
        ),
    )


async def _live_beside(db: Database, first: str, second: str) -> tuple[LiveRows, LiveRows]:
    async with db.driver() as d:
        return await live_repo.live_rows_of_two_on(d, first, second)


async def load_sides(
    s: AsyncSession,
    *,
    principal: Principal,
    target: Conversation,
    source: NodeId,
    mode: MergeMode,
    beside: Database | None = None,
    loaded: lineage_repo.Loaded | None = None,
) -> Sides:
    """Base, ours and theirs for bringing `source` into `target`'s live workspace.

    With `beside` (PostgreSQL, and only when `s` has written nothing yet), the live
    rows of both threads are read on another connection of its pool while `s` reads
    the base, when the pool has one idle: the two reads wait on the database at the
    same time. `loaded`: the walks up from both threads, read by the caller in this
    transaction."""
    # Both threads walked up in one query that also loads their threads, the base's
    # included (`node_path` and the restores read them).
    if loaded is None:  # (unless the caller read them with its lock)
        loaded = await lineage_repo.load_lineages(s, (source.thread_id, target.thread_id))
    if source.thread_id in loaded.threads:
        src, src_branch = loaded.threads[source.thread_id]
        await check_for(s, principal, src, src_branch, need=Role.VIEWER)
    else:
        src, _ = await get_for(s, principal, thread_id=source.thread_id, need=Role.VIEWER)
    if source.turn < 1 or source.turn > src.turn_index:
        raise InvalidTurn(f"node {source} does not exist (the thread is at turn {src.turn_index})")
    ours_rows: LiveRows | None = None
    theirs_state: WorkspaceState | None = None
    # The source is its thread's latest node (the snapshot rule: its live rows): read
    # with ours in one query, beside `s` when it can.
    at_tip = source.turn == src.turn_index and source.thread_id != target.thread_id
    two = None
    if at_tip and beside is not None and beside.has_spare_connection():
        two = asyncio.ensure_future(_live_beside(beside, target.thread_id, src.thread_id))
    try:
        if at_tip and two is None:
            ours_rows, rows = await live_repo.live_rows_of_two(s, target.thread_id, src.thread_id)
            theirs_state = as_of(state_of_rows(src, rows)[1], source.turn)
        elif not at_tip:
            theirs_state = await resolve_restore_state(s, src, source.turn, bare=loaded.bare)
        target_path = await _target_path(s, target)
        base_node, base = await _base(s, source, src, target_path, mode, loaded)
        if two is not None:
            ours_rows, rows = await two
            theirs_state = as_of(state_of_rows(src, rows)[1], source.turn)
    finally:
        if two is not None:  # (awaited already unless something above failed)
            two.cancel()
            await asyncio.gather(two, return_exceptions=True)
    assert theirs_state is not None
    if ours_rows is None:
        ours_rows = await live_repo.live_rows(s, target.thread_id)
    _, ours_state = state_of_rows(target, ours_rows)
    return Sides(
        base=base,
        ours=await side_of(s, ours_state),
        theirs=await side_of(s, theirs_state),
        base_node=base_node,
        target_node=target_path[-1] if target_path else None,
        ours_state=ours_state,
        ours_rows=ours_rows,
        source_conv=src,
    )


async def _target_path(s: AsyncSession, target: Conversation) -> list[NodeId]:
    if target.turn_index == 0:
        return []
    return await node_path(s, NodeId(target.thread_id, target.turn_index))


async def _base(
    s: AsyncSession,
    source: NodeId,
    src: Conversation,
    target_path: list[NodeId],
    mode: MergeMode,
    loaded: lineage_repo.Loaded,
) -> tuple[NodeId | None, Side]:
    """The base's node and its side (see the module doc)."""
    source_path = await node_path(s, source)
    if mode == "pick":
        base_node = source_path[-2] if len(source_path) >= 2 else None
        base_state = await resolve_restore_state(s, src, source.turn - 1, bare=loaded.bare)
        return base_node, await side_of(s, base_state)
    found = await _merge_base(s, source_path, target_path, loaded.merges)
    if found.recorded is not None:
        return found.node, await recorded_side(s, found.recorded)
    if found.node is not None:
        return found.node, await side_of(s, await _state_after(s, found.node, loaded.bare))
    return None, EMPTY


async def path_nodes(
    s: AsyncSession, thread_id: str, *, after: int, before: int
) -> list[tuple[str, int]]:
    """The nodes of turns `after` < k < `before` on `thread_id`'s path."""
    lineage = await Lineage.load(s, thread_id)
    if not lineage.entries:
        return []
    return [(lineage.owner_of(k), k) for k in range(after + 1, before)]
