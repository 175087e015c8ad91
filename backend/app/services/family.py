"""A family's node structure in memory: who owns which turn, and every node's parent.

Built from two queries (the family's threads with their branch rows, and the turn
records of those threads), so pruning and path questions cost the same whatever the
family's shape. Node `T:k` belongs to the thread that owns turn k: a thread owns the
turns after its branch point (a root after its fork point, usually 0). Its parent is
`T:(k-1)` when T owns that turn, else the branch-point node in T's lineage.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Conversation, ConversationBranch, WorkspaceSnapshot

Node = tuple[str, int]


def node_key(node: Node) -> str:
    return f"{node[0]}:{node[1]}"


def parse_node(turn_id: str) -> Node | None:
    thread_id, sep, k = turn_id.rpartition(":")
    if not sep or not thread_id.startswith("th_") or not k.isdigit():
        return None
    return thread_id, int(k)


@dataclass
class FamilyThread:
    thread_id: str
    parent_thread_id: str | None
    branch_point: int
    status: str  # root | active | draft | pending
    turn_index: int
    deleted: bool
    forked_from: Node | None


class Family:
    def __init__(self, threads: list[FamilyThread], nodes: set[Node]) -> None:
        self.threads = {t.thread_id: t for t in threads}
        self.nodes = nodes

    @classmethod
    async def load(cls, s: AsyncSession, root_thread_id: str) -> Family:
        rows = (
            await s.execute(
                select(Conversation, ConversationBranch)
                .outerjoin(
                    ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id
                )
                .where(Conversation.root_thread_id == root_thread_id)
            )
        ).all()
        threads = []
        for conv, branch in rows:
            forked = (
                (conv.forked_from_thread_id, conv.forked_from_turn or 0)
                if conv.forked_from_thread_id
                else None
            )
            threads.append(
                FamilyThread(
                    thread_id=conv.thread_id,
                    parent_thread_id=branch.parent_thread_id if branch else None,
                    branch_point=(
                        branch.branch_point_turn if branch else (conv.forked_from_turn or 0)
                    ),
                    status=branch.status if branch else "root",
                    turn_index=conv.turn_index,
                    deleted=conv.deleted_at is not None,
                    forked_from=forked,
                )
            )
        ids = [t.thread_id for t in threads]
        snaps = (
            await s.execute(
                select(WorkspaceSnapshot.thread_id, WorkspaceSnapshot.turn_index).where(
                    WorkspaceSnapshot.thread_id.in_(ids)
                )
            )
        ).all()
        return cls(threads, {(t, k) for t, k in snaps})

    def owns(self, thread_id: str, k: int) -> bool:
        t = self.threads.get(thread_id)
        return t is not None and t.branch_point < k <= t.turn_index

    def owner_of(self, thread_id: str, k: int) -> str | None:
        """The thread in `thread_id`'s lineage that owns turn k (cycle-safe)."""
        seen: set[str] = set()
        current: str | None = thread_id
        while current is not None and current not in seen:
            seen.add(current)
            t = self.threads.get(current)
            if t is None:
                return None
            if k > t.branch_point:
                return current
            current = t.parent_thread_id
        return None

    def parent(self, node: Node) -> Node | None:
        thread_id, k = node
        if k <= 1:
            return None
        owner = self.owner_of(thread_id, k - 1)
        return (owner, k - 1) if owner is not None else None

    def ancestors(self, node: Node | None) -> list[Node]:
        """`node` and every node above it, nearest first."""
        out: list[Node] = []
        seen: set[Node] = set()
        while node is not None and node not in seen:
            seen.add(node)
            if node in self.nodes:
                out.append(node)
            node = self.parent(node)
        return out

    def protected(self, extra_fork_refs: list[Node]) -> set[Node]:
        """Nodes a fork references, with their ancestors: never pruned."""
        keep: set[Node] = set()
        for ref in extra_fork_refs:
            keep.update(self.ancestors(ref))
        return keep


async def fork_references(s: AsyncSession, thread_ids: list[str]) -> list[Node]:
    """Nodes of these threads that some fork (a conversation elsewhere) started from."""
    rows = (
        await s.execute(
            select(Conversation.forked_from_thread_id, Conversation.forked_from_turn).where(
                Conversation.forked_from_thread_id.in_(thread_ids)
            )
        )
    ).all()
    return [(t, k or 0) for t, k in rows if t is not None]
