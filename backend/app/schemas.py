"""Wire shapes (pydantic) shared by the services, the REST routers and the AHP host."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

MAX_TEXT = 100_000
MAX_DOC = 900_000


class ForkedFrom(BaseModel):
    thread_id: str
    turn_index: int


class ConversationOut(BaseModel):
    thread_id: str
    root_thread_id: str
    title: str
    objective: str | None
    turn_index: int
    message_count: int
    created_at: datetime
    updated_at: datetime
    parent_thread_id: str | None = None
    branch_point_turn: int | None = None
    reason: str | None = None
    forked_from: ForkedFrom | None = None


class ConversationCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str | None = Field(default=None, max_length=500)
    objective: str | None = Field(default=None, max_length=MAX_TEXT)


class ConversationPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str | None = Field(default=None, max_length=500)


class DocumentOut(BaseModel):
    title: str
    content: str


class PreferenceOut(BaseModel):
    id: int | None
    uid: str
    text: str
    locked: bool
    position: int


class TodoOut(BaseModel):
    id: int | None
    uid: str
    text: str
    done: bool
    depth: int
    position: int


class ArtifactSummary(BaseModel):
    id: int
    turn_index: int
    kind: str
    title: str


class ArtifactOut(ArtifactSummary):
    content: str


class WorkspaceOut(BaseModel):
    objective: str | None
    document: DocumentOut | None
    preferences: list[PreferenceOut]
    todos: list[TodoOut]
    artifacts: list[ArtifactSummary]


class ObjectiveIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str | None = Field(max_length=MAX_TEXT)


class DocumentIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str | None = Field(default=None, max_length=500)
    content: str = Field(max_length=MAX_DOC)


class PreferenceIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    locked: bool = False


class PreferencePatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    locked: bool | None = None
    position: int | None = Field(default=None, ge=0)


MAX_DEPTH = 8


class TodoIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    done: bool = False
    depth: int = Field(default=0, ge=0, le=MAX_DEPTH)


class TodoPatch(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT)
    done: bool | None = None
    depth: int | None = Field(default=None, ge=0, le=MAX_DEPTH)
    position: int | None = Field(default=None, ge=0)


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unreachable"]
    backend: Literal["sqlite", "postgresql"]


class OverrideDocument(BaseModel):
    model_config = ConfigDict(extra="forbid")
    title: str | None = Field(default=None, max_length=500)
    content: str = Field(max_length=MAX_DOC)


class OverridePreference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uid: str | None = Field(default=None, max_length=32)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    locked: bool = False


class OverrideTodo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    uid: str | None = Field(default=None, max_length=32)
    text: str = Field(min_length=1, max_length=MAX_TEXT)
    done: bool = False
    depth: int = Field(default=0, ge=0, le=MAX_DEPTH)


class BranchWorkspaceOverride(BaseModel):
    """The edited preview sent with a branch; omitted fields fall back to the restored state."""

    model_config = ConfigDict(extra="forbid")
    objective: str | None = Field(default=None, max_length=MAX_TEXT)
    document: OverrideDocument | None = None
    preferences: list[OverridePreference] | None = Field(default=None, max_length=1000)
    todos: list[OverrideTodo] | None = Field(default=None, max_length=1000)


class BranchIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_turn: int = Field(ge=0)
    reason: str | None = Field(default=None, max_length=2000)
    workspace: BranchWorkspaceOverride | None = None


class ForkIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    from_turn: int = Field(ge=0)


class GraphThread(BaseModel):
    """One thread of a family graph; a root has no parent and no branch point."""

    thread_id: str
    title: str
    parent_thread_id: str | None
    branch_point_turn: int | None
    reason: str | None
    turn_index: int
    deleted: bool


GraphNodeState = Literal["running", "complete", "cancelled", "error"]


class GraphNode(BaseModel):
    """One turn, `id` = `"{thread_id}:{turn_index}"`."""

    id: str
    thread_id: str
    turn_index: int
    user_message: str
    captured_at: datetime
    artifact_count: int
    is_on_active_path: bool
    state: GraphNodeState


class GraphEdge(BaseModel):
    """`id` = `"{source}->{target}"`; a branch edge carries the child thread's reason."""

    id: str
    source: str
    target: str
    kind: Literal["turn", "branch"]
    reason: str | None = None


class GraphOut(BaseModel):
    root_thread_id: str
    head_turn_id: str | None
    truncated: bool
    threads: list[GraphThread]
    nodes: list[GraphNode]
    edges: list[GraphEdge]


class ActiveTurnOut(BaseModel):
    turn_id: str
    parent_turn_id: str | None


class HistoryOut(BaseModel):
    root_thread_id: str
    head_turn_id: str | None
    working_thread_id: str
    retains_branches: bool
    active_turn: ActiveTurnOut | None
    version: int = 0


class CheckoutIn(BaseModel):
    """`expected_head_turn_id`: absent = no assertion, null = the baseline."""

    model_config = ConfigDict(extra="forbid")
    turn_id: str | None = Field(max_length=80)
    expected_head_turn_id: str | None = Field(default=None, max_length=80)
    force: bool = False


MAX_MESSAGE_CHARS = 100_000


class TurnIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


class MessageOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str
    turn_index: int
