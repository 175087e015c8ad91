"""The history graph of a family: its threads, one node per owned turn, and the edges.

Read-only, and a fixed number of SQL queries whatever the family's size or depth:
ownership, the visible threads (recursive CTEs, see `app.db.repositories.graph`), the
newest `node_cap + 1` turn records, and one grouped artifact count. Lineages, the owners
of branch points, the active path and the edges are worked out in memory.

A thread owns its turns after its branch point (a root owns them all); turns up to the
branch point belong to ancestors and are reached through the lineage, so node `T:k`'s
parent is `T:(k-1)` when T owns it, else the branch-point node in T's lineage. A
branch at 0 starts at a root-level node: no parent, no branch edge.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Literal, cast

from app.db.engine import Database
from app.db.repositories import graph as repo
from app.db.repositories.graph import NodeRow, ThreadRow
from app.schemas import GraphEdge, GraphNode, GraphNodeState, GraphOut, GraphThread
from app.services.conversations import get_owned
from app.services.workspace import MAX_USER_MESSAGE_PREVIEW

_NO_LIMIT = sys.maxsize


def node_id(thread_id: str, turn_index: int) -> str:
    return f"{thread_id}:{turn_index}"


def _first_owned(thread: ThreadRow) -> int:
    return (thread.branch_point_turn or 0) + 1


def _utc(stamp: datetime) -> datetime:
    # SQLite hands back naive datetimes; every stamp the app writes is UTC.
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


class _Family:
    """The visible threads of one family, indexed for lineage walks."""

    def __init__(self, rows: Iterable[ThreadRow], *, root_thread_id: str) -> None:
        self.by_id = {r.thread_id: r for r in rows}
        self.root_thread_id = root_thread_id

    def parent(self, thread: ThreadRow) -> ThreadRow | None:
        if thread.parent_thread_id is None:
            return None
        return self.by_id.get(thread.parent_thread_id)

    def lineage(self, thread: ThreadRow) -> list[ThreadRow]:
        """`thread` and its ancestors, nearest first (cycle-safe, no depth cap)."""
        out: list[ThreadRow] = []
        seen: set[str] = set()
        current: ThreadRow | None = thread
        while current is not None and current.thread_id not in seen:
            seen.add(current.thread_id)
            out.append(current)
            current = self.parent(current)
        return out

    def owner_of(self, thread: ThreadRow, turn: int) -> ThreadRow:
        """The thread of `thread`'s lineage that owns node `turn` (turn >= 1)."""
        for entry in self.lineage(thread):
            if turn >= _first_owned(entry):
                return entry
        return thread

    def ordered(self) -> list[ThreadRow]:
        """Root first, then breadth-first by creation: parents always before children."""
        children: dict[str | None, list[ThreadRow]] = {}
        for row in self.by_id.values():
            parent = row.parent_thread_id if row.parent_thread_id in self.by_id else None
            children.setdefault(parent, []).append(row)
        for group in children.values():
            group.sort(
                key=lambda r: (r.thread_id != self.root_thread_id, r.created_at, r.thread_id)
            )
        out: list[ThreadRow] = []
        seen: set[str] = set()
        queue = list(children.get(None, []))
        while queue:
            row = queue.pop(0)
            if row.thread_id in seen:
                continue
            seen.add(row.thread_id)
            out.append(row)
            queue.extend(children.get(row.thread_id, []))
        # Only a corrupt cycle leaves threads unreached; still list them.
        out.extend(r for r in self.by_id.values() if r.thread_id not in seen)
        return out


def head_turn_id(family: _Family, requested: ThreadRow | None) -> str | None:
    """The selected node: for now the requested thread's latest turn on its lineage.

    A later feature replaces this with the family's durable head.
    """
    if requested is None or requested.turn_index <= 0:
        return None
    owner = family.owner_of(requested, requested.turn_index)
    return node_id(owner.thread_id, requested.turn_index)


def _active_path_limits(family: _Family, requested: ThreadRow | None) -> dict[str, int]:
    """Per thread of the requested lineage, the last turn of it that lies on the path."""
    limits: dict[str, int] = {}
    if requested is None:
        return limits
    bound = _NO_LIMIT
    for entry in family.lineage(requested):
        limits[entry.thread_id] = bound
        if entry.branch_point_turn is not None:
            bound = min(bound, entry.branch_point_turn)
    return limits


def _edges(family: _Family, kept: dict[str, NodeRow]) -> list[GraphEdge]:
    """Turn and branch edges whose two endpoints are both kept (never a dangling one)."""
    edges: list[GraphEdge] = []
    for target, node in kept.items():
        thread = family.by_id[node.thread_id]
        first = _first_owned(thread)
        source: str | None = None
        kind: Literal["turn", "branch"] = "turn"
        reason: str | None = None
        if node.turn_index > first:
            source = node_id(thread.thread_id, node.turn_index - 1)
        else:
            parent = family.parent(thread)
            bp = thread.branch_point_turn or 0
            if parent is not None and bp > 0:
                source = node_id(family.owner_of(parent, bp).thread_id, bp)
                kind, reason = "branch", thread.reason
        if source is not None and source in kept:
            edges.append(
                GraphEdge(
                    id=f"{source}->{target}",
                    source=source,
                    target=target,
                    kind=kind,
                    reason=reason,
                )
            )
    return edges


async def build_graph(db: Database, *, user_id: int, thread_id: str, node_cap: int) -> GraphOut:
    """The whole family of `thread_id` as a DAG, capped at `node_cap` nodes (oldest dropped)."""
    async with db.read() as session:
        conv, _ = await get_owned(session, thread_id=thread_id, user_id=user_id)
        root_thread_id = conv.root_thread_id
        rows = await repo.visible_threads(
            session, thread_id=thread_id, root_thread_id=root_thread_id
        )
        newest = await repo.newest_owned_nodes(
            session,
            thread_id=thread_id,
            root_thread_id=root_thread_id,
            limit=node_cap + 1,
            preview_chars=MAX_USER_MESSAGE_PREVIEW,
        )
        truncated = len(newest) > node_cap
        kept_rows = newest[:node_cap]
        counts = await repo.artifact_counts(session, {n.thread_id for n in kept_rows})

    family = _Family(rows, root_thread_id=root_thread_id)
    requested = family.by_id.get(thread_id)
    limits = _active_path_limits(family, requested)
    ordered = family.ordered()
    order = {row.thread_id: i for i, row in enumerate(ordered)}
    kept_rows.sort(key=lambda n: (order.get(n.thread_id, len(order)), n.turn_index))
    kept = {node_id(n.thread_id, n.turn_index): n for n in kept_rows}

    nodes = [
        GraphNode(
            id=nid,
            thread_id=n.thread_id,
            turn_index=n.turn_index,
            user_message=n.user_message,
            captured_at=_utc(n.captured_at),
            artifact_count=counts.get((n.thread_id, n.turn_index), 0),
            is_on_active_path=n.turn_index <= limits.get(n.thread_id, -1),
            state=cast(GraphNodeState, n.state),
        )
        for nid, n in kept.items()
    ]
    threads = [
        GraphThread(
            thread_id=t.thread_id,
            title=t.title,
            parent_thread_id=t.parent_thread_id,
            branch_point_turn=t.branch_point_turn,
            reason=t.reason,
            turn_index=t.turn_index,
            deleted=t.deleted,
        )
        for t in ordered
    ]
    return GraphOut(
        root_thread_id=root_thread_id,
        head_turn_id=head_turn_id(family, requested),
        truncated=truncated,
        threads=threads,
        nodes=nodes,
        edges=_edges(family, kept),
    )
