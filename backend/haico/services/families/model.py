"""The family model: the one place that answers lineage, ownership, path and visibility.

A family is a root thread and every branch below it. Thread T owns the turns after its
branch point (a root after its fork point, usually 0): `first_owned_turn`. Node `T:k`'s
parent is `T:(k-1)` when T owns that turn, else the branch-point node in T's lineage;
a first turn at 1 (or a branch at 0) is a root-level node with no parent. Every
question about who owns a turn, which nodes lie on a path, which threads a graph shows
and where the head is when a family has no durable head is answered here, from the
rows the threads repository returns; walks keep a seen-set, so a corrupt cycle ends
them, and none has a depth cap.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Iterator

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.repositories import lineage as lineage_repo
from haico.db.repositories import threads as repo
from haico.db.repositories.threads import LineageEntry, ThreadRow
from haico.domain import BranchStatus, NodeId


def first_owned_turn(branch_point_turn: int | None, forked_from_turn: int | None = None) -> int:
    """The first turn a thread owns: after its branch point, or a root after its fork point."""
    if branch_point_turn is not None:
        return branch_point_turn + 1
    return (forked_from_turn or 0) + 1


class Family:
    """Every thread of one family (hidden ones included), indexed for walks."""

    def __init__(self, rows: Iterable[ThreadRow], *, root_thread_id: str) -> None:
        self.root_thread_id = root_thread_id
        self.threads: dict[str, ThreadRow] = {r.thread_id: r for r in rows}
        self._children: dict[str, list[ThreadRow]] = {}
        for row in self.threads.values():
            if row.parent_thread_id is not None:
                self._children.setdefault(row.parent_thread_id, []).append(row)
        for kids in self._children.values():
            kids.sort(key=lambda r: (r.created_at, r.thread_id))
        # Retained nodes: filled by `load_nodes` for the callers that need them.
        self.nodes: set[NodeId] = set()

    @classmethod
    async def load(cls, s: AsyncSession, root_thread_id: str, *, nodes: bool = False) -> Family:
        family = cls(await repo.family_threads(s, root_thread_id), root_thread_id=root_thread_id)
        if nodes:
            family.nodes = {NodeId(t, k) for t, k in await repo.node_keys(s, list(family.threads))}
        return family

    # ---- lineage and ownership ----

    def lineage(self, thread_id: str) -> Iterator[ThreadRow]:
        """The thread and its ancestors, nearest first (lazily: most walks stop early)."""
        seen: set[str] = set()
        current = self.threads.get(thread_id)
        while current is not None and current.thread_id not in seen:
            seen.add(current.thread_id)
            yield current
            current = self.threads.get(current.parent_thread_id or "")

    def first_owned(self, thread_id: str) -> int:
        row = self.threads[thread_id]
        return first_owned_turn(row.branch_point_turn, row.forked_from_turn)

    def owner_of(self, thread_id: str, k: int) -> str | None:
        """The thread of `thread_id`'s lineage that owns turn k, or None (before the root)."""
        for row in self.lineage(thread_id):
            if k >= first_owned_turn(row.branch_point_turn, row.forked_from_turn):
                return row.thread_id
        return None

    def parent(self, node: NodeId) -> NodeId | None:
        if node.turn <= 1:
            return None
        owner = self.owner_of(node.thread_id, node.turn - 1)
        return NodeId(owner, node.turn - 1) if owner is not None else None

    def ancestors(self, node: NodeId | None) -> list[NodeId]:
        """`node` and every retained node above it, nearest first."""
        out: list[NodeId] = []
        seen: set[NodeId] = set()
        while node is not None and node not in seen:
            seen.add(node)
            if node in self.nodes:
                out.append(node)
            node = self.parent(node)
        return out

    def descendants(self, thread_id: str) -> set[str]:
        """The thread and every thread below it."""
        out: set[str] = set()
        stack = [thread_id]
        while stack:
            current = stack.pop()
            if current in out:
                continue
            out.add(current)
            stack.extend(r.thread_id for r in self._children.get(current, []))
        return out

    def archived(self) -> set[str]:
        """Threads hidden by an archive: each archived thread and every thread below it."""
        out: set[str] = set()
        for row in self.threads.values():
            if row.archived:
                out |= self.descendants(row.thread_id)
        return out

    def branch_point_node(self, thread_id: str) -> NodeId | None:
        """The node a branch hangs from; None for a root, or a branch at 0."""
        row = self.threads[thread_id]
        bp = row.branch_point_turn or 0
        if row.parent_thread_id is None or bp <= 0:
            return None
        owner = self.owner_of(row.parent_thread_id, bp)
        return NodeId(owner, bp) if owner is not None else None

    def protected(self, fork_refs: Iterable[NodeId]) -> set[NodeId]:
        """Nodes a fork references, with their ancestors: never pruned."""
        keep: set[NodeId] = set()
        for ref in fork_refs:
            keep.update(self.ancestors(ref))
        return keep

    # ---- what a graph shows, and the head ----

    def shown(self, requested: str) -> list[ThreadRow]:
        """The threads a graph shows, parents before children (siblings by creation).

        A child branch is entered when it is active and not soft-deleted, or when it
        leads to the requested thread: the requested thread and all its ancestors are
        always shown (a deleted ancestor still owns history its descendants inherit; a
        requested draft is the working thread). Other drafts, pending and deleted
        branches are hidden together with their whole subtree.
        """
        on_lineage = {r.thread_id for r in self.lineage(requested)}
        ordered: list[ThreadRow] = []
        root = self.threads.get(self.root_thread_id)
        queue = deque([root] if root is not None else [])
        seen: set[str] = set()
        while queue:
            row = queue.popleft()
            if row.thread_id in seen:
                continue
            seen.add(row.thread_id)
            ordered.append(row)
            queue.extend(
                kid
                for kid in self._children.get(row.thread_id, [])
                if kid.thread_id in on_lineage
                or (kid.status == BranchStatus.ACTIVE and not kid.deleted)
            )
        return ordered

    def path_limits(self, thread_id: str) -> dict[str, int]:
        """Per thread of the lineage, the last turn of it that lies on the path to its tip."""
        limits: dict[str, int] = {}
        bound = self.threads[thread_id].turn_index if thread_id in self.threads else 0
        for row in self.lineage(thread_id):
            limits[row.thread_id] = bound
            if row.branch_point_turn is not None:
                bound = min(bound, row.branch_point_turn)
        return limits

    def tip(self, thread_id: str) -> NodeId | None:
        """The node at the end of a thread's path: its latest turn, wherever it is owned.

        This is also the head of a family that has no durable history state yet.
        """
        row = self.threads.get(thread_id)
        if row is None or row.turn_index <= 0:
            return None
        owner = self.owner_of(thread_id, row.turn_index)
        return NodeId(owner, row.turn_index) if owner is not None else None


class Lineage:
    """One thread's ancestry, from a single recursive query: for as-of reads and paths."""

    def __init__(self, entries: list[LineageEntry]) -> None:
        self.entries = entries

    @classmethod
    async def load(cls, s: AsyncSession, thread_id: str) -> Lineage:
        return cls(await lineage_repo.lineage(s, thread_id))

    @property
    def thread_ids(self) -> set[str]:
        return {e.thread_id for e in self.entries}

    def owner_of(self, k: int) -> str:
        """The thread that owns turn k; the root stands in for turns before its first."""
        for e in self.entries:
            if k >= first_owned_turn(e.branch_point_turn, e.forked_from_turn):
                return e.thread_id
        return self.entries[-1].thread_id

    def fork_source(self, turn: int) -> str | None:
        """For a turn before the family's fork point: the thread it was forked from,
        whose family holds that turn (None when the family owns the turn)."""
        root = self.entries[-1]
        if root.forked_from_thread_id is None or turn > (root.forked_from_turn or 0):
            return None
        return root.forked_from_thread_id

    def path_to(self, turn: int) -> list[NodeId]:
        """The nodes from the first turn to `turn` of this thread's path, oldest first."""
        ids: list[NodeId] = []
        upper = turn
        for e in self.entries:
            lower = first_owned_turn(e.branch_point_turn, e.forked_from_turn) - 1
            ids.extend(NodeId(e.thread_id, k) for k in range(upper, lower, -1))
            upper = min(upper, lower)
        return list(reversed(ids))
