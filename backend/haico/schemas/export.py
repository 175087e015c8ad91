"""The export document of a family (`GET …/export`, `POST /api/conversations/import`).

Kept apart from `schemas.py` for size; the same rules apply (wire shapes only, no
layer imported). Unknown fields are refused; text may hold no NUL.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from haico.domain import TITLE_CHARS, NodeState
from haico.schemas.common import MAX_INT, NO_NUL, Timestamp
from haico.schemas.conversations import MAX_NAME
from haico.schemas.export_coding import ExportCodebook, ExportCoding, ExportJudgment
from haico.schemas.workspace import MAX_DEPTH, RejectedSurface

EXPORT_FORMAT = "haico.family"
EXPORT_VERSION = 1
# Text inside an import: no NUL (PostgreSQL text cannot hold it).
ImportText = Annotated[str, Field(pattern=NO_NUL)]
DOC = ConfigDict(extra="forbid")


class ExportPreference(BaseModel):
    model_config = DOC
    uid: ImportText = Field(min_length=1, max_length=32)
    text: ImportText
    locked: bool = False


class ExportTodo(BaseModel):
    model_config = DOC
    uid: ImportText = Field(min_length=1, max_length=32)
    text: ImportText
    done: bool = False
    depth: int = Field(default=0, ge=0, le=MAX_DEPTH)


class ExportRejected(BaseModel):
    model_config = DOC
    uid: ImportText = Field(min_length=1, max_length=32)
    surface: RejectedSurface
    text: ImportText
    rejected_after_turn: int = Field(ge=0, le=MAX_INT)


class ExportArtifactRef(BaseModel):
    """An artifact a workspace lists, without its row id."""

    model_config = DOC
    turn_index: int
    kind: str
    title: str
    uid: str | None = None


class ExportDocument(BaseModel):
    model_config = DOC
    title: ImportText = Field(max_length=TITLE_CHARS)
    content: ImportText


class ExportWorkspace(BaseModel):
    """A workspace as one point of the family saw it (no row ids)."""

    model_config = DOC
    objective: ImportText | None
    document: ExportDocument | None
    preferences: list[ExportPreference]
    todos: list[ExportTodo]
    rejected: list[ExportRejected] = Field(default_factory=list)
    artifacts: list[ExportArtifactRef] = Field(default_factory=list)


class ExportToolCall(BaseModel):
    model_config = DOC
    id: ImportText | None = None
    name: ImportText
    args: dict[str, Any] = Field(default_factory=dict)


class ExportMessage(BaseModel):
    """One transcript entry: a user message, a reply (with its tool calls) or a tool result."""

    model_config = DOC
    role: Literal["user", "assistant", "tool"]
    content: ImportText
    # Set on a fork's inherited entries; a node's entries take the node's turn.
    turn_index: int | None = Field(default=None, ge=0, le=MAX_INT)
    tool_calls: list[ExportToolCall] | None = None
    state: ImportText | None = None
    name: ImportText | None = None
    tool_call_id: ImportText | None = None
    status: ImportText | None = None


class ExportArtifact(BaseModel):
    """An artifact row. `uid` is absent in documents written before artifacts had one:
    then it is derived from kind, title and content, as the upgrade did."""

    model_config = DOC
    uid: ImportText | None = Field(default=None, min_length=1, max_length=32)
    turn_index: int = Field(ge=0, le=MAX_INT)
    kind: ImportText = Field(max_length=50)
    title: ImportText = Field(max_length=TITLE_CHARS)
    content: ImportText
    created_at: Timestamp | None = None


class ExportProvenance(BaseModel):
    """A node's provenance (the research ledger)."""

    model_config = DOC
    provider: ImportText = Field(max_length=20)
    model: ImportText = Field(max_length=200)
    profile_id: ImportText | None = Field(default=None, max_length=80)
    params: dict[str, Any] = Field(default_factory=dict)
    instructions_sha256: ImportText | None = Field(default=None, max_length=64)
    input_tokens: int | None = Field(default=None, ge=0, le=MAX_INT)
    output_tokens: int | None = Field(default=None, ge=0, le=MAX_INT)
    tokens_estimated: bool = False
    first_token_ms: int | None = Field(default=None, ge=0, le=MAX_INT)
    duration_ms: int | None = Field(default=None, ge=0, le=MAX_INT)
    tool_calls: int = Field(default=0, ge=0, le=MAX_INT)
    cost_usd: float | None = Field(default=None, ge=0)
    profile_name: ImportText | None = Field(default=None, max_length=80)
    ignored_params: list[Annotated[ImportText, Field(max_length=20)]] | None = Field(
        default=None, max_length=10
    )


class ExportEdit(BaseModel):
    """One workspace change of a node and who made it."""

    model_config = DOC
    surface: ImportText = Field(max_length=20)
    uid: ImportText | None = Field(default=None, max_length=64)
    kind: Literal["add", "remove", "change"]
    origin: Literal["user", "agent", "merge", "replay", "import"]
    author: ImportText | None = Field(default=None, max_length=200)
    at: Timestamp


class ExportNote(BaseModel):
    """A researcher's note on a node, with its codes."""

    model_config = DOC
    text: ImportText = Field(min_length=1, max_length=20_000)
    codes: list[Annotated[str, Field(min_length=1, max_length=60, pattern=NO_NUL)]] = Field(
        default_factory=list, max_length=20
    )
    author: ImportText = Field(default="", max_length=200)
    # A note of an imported family: the author its own document recorded (on import,
    # the importer becomes `author` and the document's `author` lands here).
    imported_author: ImportText | None = Field(default=None, max_length=200)
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None


class ExportMergedArtifact(BaseModel):
    """An artifact as a merge base records it: its uid and its content's digest."""

    model_config = DOC
    uid: ImportText = Field(min_length=1, max_length=32)
    kind: ImportText = Field(max_length=50)
    title: ImportText = Field(max_length=TITLE_CHARS)
    digest: ImportText = Field(max_length=64)


class ExportMergeBase(BaseModel):
    """A merge node's record of the source's workspace as it was brought in: the base
    of a later merge of the same path (the document inline, not by hash)."""

    model_config = DOC
    objective: ImportText | None = None
    title: ImportText | None = Field(default=None, max_length=TITLE_CHARS)
    content: ImportText | None = None
    preferences: list[ExportPreference] = Field(default_factory=list)
    todos: list[ExportTodo] = Field(default_factory=list)
    artifacts: list[ExportMergedArtifact] = Field(default_factory=list)


class ExportNode(BaseModel):
    """A turn: its messages, and the workspace after it (null when no snapshot kept it)."""

    model_config = DOC
    id: str
    thread_id: str
    turn_index: int = Field(ge=1, le=MAX_INT)
    state: NodeState
    captured_at: Timestamp | None = None
    completed_at: Timestamp | None = None
    user_message: ImportText
    reply: ImportText
    messages: list[ExportMessage]
    workspace: ExportWorkspace | None
    # The research ledger (absent in documents written before it).
    provenance: ExportProvenance | None = None
    edits: list[ExportEdit] = Field(default_factory=list)
    notes: list[ExportNote] = Field(default_factory=list)
    # A merge or pick node (`services.merge`) and its source node (a node id); a
    # revert node and the merge node it undid.
    kind: Literal["turn", "merge", "pick", "revert"] = "turn"
    merged_from: str | None = Field(default=None, max_length=80)
    merge_base: ExportMergeBase | None = None
    # The grantee who made the node in a shared family (null: the owner).
    author: ImportText | None = Field(default=None, max_length=200)
    # A node of an imported family: the author its own document recorded (on import,
    # the importer makes every node and the document's `author` lands here).
    imported_author: ImportText | None = Field(default=None, max_length=200)


class ExportThread(BaseModel):
    """A thread with its branch link; `start_workspace` is what its first own turn
    started from, `workspace` its live rows."""

    model_config = DOC
    thread_id: str
    parent_thread_id: str | None
    branch_point_turn: int | None = Field(ge=0, le=MAX_INT)
    reason: ImportText | None = Field(default=None, max_length=2000)
    title: ImportText = Field(max_length=TITLE_CHARS)
    name: ImportText | None = Field(default=None, max_length=MAX_NAME)
    turn_index: int = Field(ge=0, le=MAX_INT)
    message_count: int = Field(default=0, ge=0, le=MAX_INT)
    created_at: Timestamp | None = None
    updated_at: Timestamp | None = None
    start_workspace: ExportWorkspace | None
    workspace: ExportWorkspace
    artifacts: list[ExportArtifact]


class ExportForkedFrom(BaseModel):
    """Fork provenance: the node of another family this one was forked from
    (`thread_id` null when that thread is not known here)."""

    model_config = DOC
    thread_id: str | None
    turn_index: int = Field(ge=0, le=MAX_INT)


class FamilyExport(BaseModel):
    """A whole family as one versioned document (`GET …/export`, `POST …/import`).

    `inherited_messages` is the transcript a fork carries from its source (turns up to
    the fork point); threads come parents first.
    """

    model_config = DOC
    format: Literal["haico.family"]
    version: int = Field(ge=1)
    exported_at: Timestamp | None = None
    root_thread_id: str
    forked_from: ExportForkedFrom | None = None
    inherited_messages: list[ExportMessage] = Field(default_factory=list)
    threads: list[ExportThread] = Field(min_length=1)
    nodes: list[ExportNode]
    # Coding (`export_coding`): absent from a document of a server without it.
    codebooks: list[ExportCodebook] = Field(default_factory=list, max_length=100)
    codings: list[ExportCoding] = Field(default_factory=list)
    judgments: list[ExportJudgment] = Field(default_factory=list)
