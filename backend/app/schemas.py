"""Wire shapes (pydantic) shared by the services, the REST routers and the AHP host."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict, Field

from app.domain import NEW_THREAD_ID, TITLE_CHARS, NodeState

MAX_TEXT = 100_000
MAX_DOC = 900_000
# The largest id or turn number a request may name (the columns are 32-bit or larger).
MAX_INT = 2**31 - 1


def _assume_utc(value: Any) -> Any:
    # SQLite hands back naive datetimes; every stored time is UTC.
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


Timestamp = Annotated[AwareDatetime, BeforeValidator(_assume_utc)]
"""An RFC 3339 time with its UTC offset, on every database."""

# No NUL characters in request text: PostgreSQL text cannot store them.
NO_NUL = r"^[^\x00]*$"

# Request bodies: strict types (no "1" for 1, no `false` for 0, no 1.0 for `true`);
# unknown fields refused.
STRICT = ConfigDict(extra="forbid", strict=True)


class ErrorOut(BaseModel):
    """Every error answer: a snake_case `code` and a human `message`."""

    code: str
    message: str
    data: dict[str, Any] | None = None


class ValidationErrorOut(ErrorOut):
    """A request that does not match its schema; `detail` is FastAPI's error list."""

    detail: list[dict[str, Any]] | None = None


class ForkedFrom(BaseModel):
    thread_id: str
    turn_index: int


class ConversationOut(BaseModel):
    thread_id: str
    root_thread_id: str
    title: str
    name: str | None
    objective: str | None
    turn_index: int
    message_count: int
    created_at: Timestamp
    updated_at: Timestamp
    parent_thread_id: str | None = None
    branch_point_turn: int | None = None
    reason: str | None = None
    forked_from: ForkedFrom | None = None
    # Big trees: the branch's one-line summary (null until derived) and whether it is
    # archived (itself or through an archived ancestor).
    summary: str | None = None
    archived: bool = False
    # The branch's model profile ("default": the server's configured model).
    profile_id: str = "default"


class ConversationCreate(BaseModel):
    model_config = STRICT
    title: str | None = Field(default=None, max_length=TITLE_CHARS, pattern=NO_NUL)
    objective: str | None = Field(default=None, max_length=MAX_TEXT, pattern=NO_NUL)
    # The studio names a conversation before its first send creates it.
    new_id: str | None = Field(
        default=None,
        pattern=f"^{NEW_THREAD_ID.pattern}$",
        description="the new thread's id, chosen by the client (th_ and 32 hex digits); "
        "taken → 409 already_exists",
    )


MAX_NAME = 80


class ConversationPatch(BaseModel):
    """A rename: `title` and/or the short branch `name` (`name: null` clears it);
    `archived` archives the branch and its descendants (false: unarchive)."""

    model_config = STRICT
    title: str | None = Field(default=None, max_length=TITLE_CHARS, pattern=NO_NUL)
    name: str | None = Field(default=None, max_length=MAX_NAME, pattern=NO_NUL)
    archived: bool | None = None
    # The branch's model profile (`default`: the server's configured model).
    profile_id: str | None = Field(default=None, min_length=1, max_length=40, pattern=NO_NUL)


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
    # Stable identity, kept by every copy (branch, fork, merge, export).
    uid: str
    turn_index: int
    kind: str
    title: str


class ArtifactOut(ArtifactSummary):
    content: str


RejectedSurface = Literal["preference", "todo"]


class RejectedOut(BaseModel):
    """A deleted preference or todo, kept as a rejected decision."""

    uid: str
    surface: RejectedSurface
    text: str
    rejected_after_turn: int


class WorkspaceOut(BaseModel):
    objective: str | None
    document: DocumentOut | None
    preferences: list[PreferenceOut]
    todos: list[TodoOut]
    artifacts: list[ArtifactSummary]
    rejected: list[RejectedOut]


class ObjectiveIn(BaseModel):
    model_config = STRICT
    text: str | None = Field(max_length=MAX_TEXT, pattern=NO_NUL)


class DocumentIn(BaseModel):
    model_config = STRICT
    title: str | None = Field(default=None, max_length=TITLE_CHARS, pattern=NO_NUL)
    content: str = Field(max_length=MAX_DOC, pattern=NO_NUL)


class PreferenceIn(BaseModel):
    model_config = STRICT
    text: str = Field(min_length=1, max_length=MAX_TEXT, pattern=NO_NUL)
    locked: bool = False


class PreferencePatch(BaseModel):
    model_config = STRICT
    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT, pattern=NO_NUL)
    locked: bool | None = None
    position: int | None = Field(default=None, ge=0, le=MAX_INT)


MAX_DEPTH = 8


class TodoIn(BaseModel):
    model_config = STRICT
    text: str = Field(min_length=1, max_length=MAX_TEXT, pattern=NO_NUL)
    done: bool = False
    depth: int = Field(default=0, ge=0, le=MAX_DEPTH)


class TodoPatch(BaseModel):
    model_config = STRICT
    text: str | None = Field(default=None, min_length=1, max_length=MAX_TEXT, pattern=NO_NUL)
    done: bool | None = None
    depth: int | None = Field(default=None, ge=0, le=MAX_DEPTH)
    position: int | None = Field(default=None, ge=0, le=MAX_INT)


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unreachable"]
    backend: Literal["sqlite", "postgresql"]


class OverrideDocument(BaseModel):
    model_config = STRICT
    title: str | None = Field(default=None, max_length=TITLE_CHARS, pattern=NO_NUL)
    content: str = Field(max_length=MAX_DOC, pattern=NO_NUL)


class OverridePreference(BaseModel):
    model_config = STRICT
    uid: str | None = Field(default=None, max_length=32, pattern=NO_NUL)
    text: str = Field(min_length=1, max_length=MAX_TEXT, pattern=NO_NUL)
    locked: bool = False


class OverrideTodo(BaseModel):
    model_config = STRICT
    uid: str | None = Field(default=None, max_length=32, pattern=NO_NUL)
    text: str = Field(min_length=1, max_length=MAX_TEXT, pattern=NO_NUL)
    done: bool = False
    depth: int = Field(default=0, ge=0, le=MAX_DEPTH)


class BranchWorkspaceOverride(BaseModel):
    """The edited preview sent with a branch; omitted fields fall back to the restored state."""

    model_config = STRICT
    objective: str | None = Field(default=None, max_length=MAX_TEXT, pattern=NO_NUL)
    document: OverrideDocument | None = None
    preferences: list[OverridePreference] | None = Field(default=None, max_length=1000)
    todos: list[OverrideTodo] | None = Field(default=None, max_length=1000)


class BranchIn(BaseModel):
    model_config = STRICT
    from_turn: int = Field(ge=0, le=MAX_INT)
    reason: str | None = Field(default=None, max_length=2000, pattern=NO_NUL)
    workspace: BranchWorkspaceOverride | None = None


class ForkIn(BaseModel):
    model_config = STRICT
    from_turn: int = Field(ge=0, le=MAX_INT)


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

    model_config = STRICT
    turn_id: str | None = Field(max_length=80, pattern=NO_NUL)
    expected_head_turn_id: str | None = Field(default=None, max_length=80, pattern=NO_NUL)
    force: bool = False


MAX_MESSAGE_CHARS = 100_000


class TurnIn(BaseModel):
    model_config = STRICT
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS, pattern=NO_NUL)
    # Run this one turn with another model profile than the branch's.
    profile_id: str | None = Field(default=None, min_length=1, max_length=40, pattern=NO_NUL)


class MessageOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str
    turn_index: int


# ---- research: compare ----


class CompareNode(BaseModel):
    """One end of a comparison (or their common ancestor)."""

    node_id: str
    thread_id: str
    root_thread_id: str
    turn_index: int


class ObjectiveDiff(BaseModel):
    before: str | None
    after: str | None
    changed: bool


class DocumentDiff(BaseModel):
    """The document from `a` to `b`: titles, and the body as a unified diff."""

    title_before: str | None
    title_after: str | None
    changed: bool
    diff: str
    added_lines: int
    removed_lines: int


PreferenceField = Literal["text", "locked"]
TodoField = Literal["text", "done", "depth"]


class PreferenceChange(BaseModel):
    uid: str
    before: PreferenceOut
    after: PreferenceOut
    fields: list[PreferenceField]


class TodoChange(BaseModel):
    uid: str
    before: TodoOut
    after: TodoOut
    fields: list[TodoField]


class PreferencesDiff(BaseModel):
    """Matched by `uid`: only in `b` is added, only in `a` removed."""

    added: list[PreferenceOut]
    removed: list[PreferenceOut]
    changed: list[PreferenceChange]


class TodosDiff(BaseModel):
    added: list[TodoOut]
    removed: list[TodoOut]
    changed: list[TodoChange]


class ArtifactsDiff(BaseModel):
    """Artifacts present at `b` and not at `a` (added), and the reverse (removed)."""

    added: list[ArtifactSummary]
    removed: list[ArtifactSummary]


class RejectedSides(BaseModel):
    a: list[RejectedOut]
    b: list[RejectedOut]


class EditOrigin(BaseModel):
    """Who made one workspace change on `b`'s path since the common ancestor."""

    node_id: str
    surface: str
    uid: str | None
    kind: Literal["add", "remove", "change"]
    origin: Literal["user", "agent", "merge", "replay", "import"]
    author: str | None
    at: Timestamp


class Comparison(BaseModel):
    """Two nodes' workspaces side by side, from `a` (before) to `b` (after).

    `common_ancestor` is the newest node on both paths (across a fork too), or null.
    """

    a: CompareNode
    b: CompareNode
    common_ancestor: CompareNode | None
    objective: ObjectiveDiff
    document: DocumentDiff
    preferences: PreferencesDiff
    todos: TodosDiff
    artifacts: ArtifactsDiff
    rejected: RejectedSides
    # Every recorded change on `b`'s path after the common ancestor, oldest first.
    edits: list[EditOrigin] = Field(default_factory=list)
