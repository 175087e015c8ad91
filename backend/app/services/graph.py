"""The history graph of a family: its threads, one node per owned turn, and the edges.

Read-only, and five SQL queries whatever the family's size or depth: ownership, the
family's threads with their branch rows (one indexed query on `root_thread_id`), the
newest `node_cap + 1` turn records of the shown threads, one grouped artifact count,
and the family's durable head. Which threads are shown, lineages, the owners of branch
points, the active path and the edges are worked out in memory, in time linear in the
family.

A thread owns its turns after its branch point (a root owns them all); turns up to the
branch point belong to ancestors and are reached through the lineage, so node `T:k`'s
parent is `T:(k-1)` when T owns it, else the branch-point node in T's lineage. A
branch at 0 starts at a root-level node: no parent, no branch edge.
"""

from __future__ import annotations

import sys
from collections import deque
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import Literal, cast

from app.db.engine import Database
from app.db.models import ChatHead
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
    """The threads a family graph shows, indexed for lineage walks.

    Walking down from the root, a child branch is entered when it is `active` and not
    soft-deleted, or when it leads to the requested thread: the requested thread and
    all its ancestors are always shown (a deleted ancestor still owns history its
    descendants inherit; a requested draft is the working thread). Drafts, pending and
    deleted branches are otherwise hidden together with their whole subtree. Every
    walk keeps a seen-set, so a corrupt cycle ends it, and none has a depth cap.
    """

    def __init__(self, rows: Iterable[ThreadRow], *, root_thread_id: str, requested: str) -> None:
        everything = {r.thread_id: r for r in rows}
        children: dict[str, list[ThreadRow]] = {}
        for row in everything.values():
            if row.parent_thread_id is not None:
                children.setdefault(row.parent_thread_id, []).append(row)
        on_lineage: set[str] = set()
        current = everything.get(requested)
        while current is not None and current.thread_id not in on_lineage:
            on_lineage.add(current.thread_id)
            current = everything.get(current.parent_thread_id or "")

        # Breadth-first from the root, siblings by creation: parents precede children.
        self.ordered: list[ThreadRow] = []
        queue = deque([everything[root_thread_id]] if root_thread_id in everything else [])
        seen: set[str] = set()
        while queue:
            row = queue.popleft()
            if row.thread_id in seen:
                continue
            seen.add(row.thread_id)
            self.ordered.append(row)
            kids = sorted(
                children.get(row.thread_id, []), key=lambda r: (r.created_at, r.thread_id)
            )
            queue.extend(
                kid
                for kid in kids
                if kid.thread_id in on_lineage or (kid.status == "active" and not kid.deleted)
            )
        self.by_id = {r.thread_id: r for r in self.ordered}
        self.requested = self.by_id.get(requested)

    def parent(self, thread: ThreadRow) -> ThreadRow | None:
        if thread.parent_thread_id is None:
            return None
        return self.by_id.get(thread.parent_thread_id)

    def lineage(self, thread: ThreadRow) -> Iterator[ThreadRow]:
        """`thread` and its ancestors, nearest first (lazily: most walks stop early)."""
        seen: set[str] = set()
        current: ThreadRow | None = thread
        while current is not None and current.thread_id not in seen:
            seen.add(current.thread_id)
            yield current
            current = self.parent(current)

    def owner_of(self, thread: ThreadRow, turn: int) -> ThreadRow:
        """The thread of `thread`'s lineage that owns node `turn` (turn >= 1)."""
        for entry in self.lineage(thread):
            if turn >= _first_owned(entry):
                return entry
        return thread


def derived_head_turn_id(family: _Family) -> str | None:
    """The requested thread's latest turn on its lineage: the head of a family that
    has no durable history state yet."""
    requested = family.requested
    if requested is None or requested.turn_index <= 0:
        return None
    owner = family.owner_of(requested, requested.turn_index)
    return node_id(owner.thread_id, requested.turn_index)


def _active_path_limits(family: _Family) -> dict[str, int]:
    """Per thread of the requested lineage, the last turn of it that lies on the path."""
    limits: dict[str, int] = {}
    if family.requested is None:
        return limits
    bound = _NO_LIMIT
    for entry in family.lineage(family.requested):
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
        rows = await repo.family_threads(session, root_thread_id=root_thread_id)
        family = _Family(rows, root_thread_id=root_thread_id, requested=thread_id)
        newest = await repo.newest_owned_nodes(
            session,
            thread_ids=family.by_id.keys(),
            limit=node_cap + 1,
            preview_chars=MAX_USER_MESSAGE_PREVIEW,
        )
        truncated = len(newest) > node_cap
        kept_rows = newest[:node_cap]
        counts = await repo.artifact_counts(session, {n.thread_id for n in kept_rows})
        durable = await session.get(ChatHead, root_thread_id)
        head = durable.head_turn_id if durable is not None else derived_head_turn_id(family)

    limits = _active_path_limits(family)
    order = {row.thread_id: i for i, row in enumerate(family.ordered)}
    kept_rows.sort(key=lambda n: (order[n.thread_id], n.turn_index))
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
        for t in family.ordered
    ]
    return GraphOut(
        root_thread_id=root_thread_id,
        head_turn_id=head,
        truncated=truncated,
        threads=threads,
        nodes=nodes,
        edges=_edges(family, kept),
    )
