"""A family drawn as a graph: its threads, its nodes (one per turn) and the edges
between them (a turn, a branch, a merge)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from haico.domain import NodeState
from haico.schemas.common import Timestamp


class GraphThread(BaseModel):
    """One thread of a family graph; a root has no parent and no branch point."""

    thread_id: str
    title: str
    name: str | None
    parent_thread_id: str | None
    branch_point_turn: int | None
    reason: str | None
    turn_index: int
    deleted: bool
    summary: str | None = None
    archived: bool = False


class GraphNode(BaseModel):
    """One turn, `id` = `"{thread_id}:{turn_index}"`."""

    id: str
    thread_id: str
    turn_index: int
    user_message: str
    captured_at: Timestamp
    artifact_count: int
    is_on_active_path: bool
    state: NodeState
    # The research ledger: the model that produced the node and its notes' codes.
    model: str | None = None
    codes: list[str] = Field(default_factory=list)
    # `merge`: the node brought another node's work in (its `user_message` says what).
    kind: Literal["turn", "merge"] = "turn"


class GraphEdge(BaseModel):
    """`id` = `"{source}->{target}"`; a branch edge carries the child thread's reason;
    a merge edge goes from the source node to the merge node."""

    id: str
    source: str
    target: str
    kind: Literal["turn", "branch", "merge"]
    reason: str | None = None


class GraphOut(BaseModel):
    root_thread_id: str
    head_turn_id: str | None
    truncated: bool
    threads: list[GraphThread]
    nodes: list[GraphNode]
    edges: list[GraphEdge]
