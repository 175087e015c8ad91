"""Wire shapes of the research ledger: a node's provenance and edits, notes, codes.

Kept apart from `schemas.py` for size; the same rules apply (wire shapes only).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from haico.domain import NodeState
from haico.schemas.common import NO_NUL, STRICT, Timestamp

EditOrigin = Literal["user", "agent", "merge", "replay", "import"]
EditKind = Literal["add", "remove", "change"]
NodeKind = Literal["turn", "merge"]

MAX_NOTE = 20_000
MAX_CODES = 20
MAX_CODE = 60
Code = Annotated[
    str, Field(min_length=1, max_length=MAX_CODE, pattern=r"^[^\x00\n\r]*\S[^\x00\n\r]*$")
]


class Provenance(BaseModel):
    """Who and what produced a node. Unknown values are null (a node made before the
    ledger existed, or a turn whose process died)."""

    provider: str | None
    model: str | None
    profile_id: str | None
    params: dict[str, Any]
    instructions_sha256: str | None
    input_tokens: int | None
    output_tokens: int | None
    tokens_estimated: bool
    first_token_ms: int | None
    duration_ms: int | None
    tool_calls: int
    cost_usd: float | None
    # The profile's name when the node was made, and the parameters it set that its
    # provider does not take (null: a node made before profiles existed).
    profile_name: str | None = None
    ignored_params: list[str] | None = None


class NodeEdit(BaseModel):
    """One workspace change that belongs to a node, and who made it."""

    surface: str
    uid: str | None
    kind: EditKind
    origin: EditOrigin
    author: str | None
    at: Timestamp


class NoteOut(BaseModel):
    id: int
    node_id: str
    text: str
    codes: list[str]
    author: str
    created_at: Timestamp
    updated_at: Timestamp
    # Whether the caller wrote it: only its writer may change or delete a note.
    mine: bool = False
    # An imported note: the author its document recorded (`author` is the importer).
    imported_author: str | None = None


class NodeOut(BaseModel):
    """One node with its provenance, its edits and the researcher's notes on it."""

    node_id: str
    thread_id: str
    turn_index: int
    kind: NodeKind
    state: NodeState
    user_message: str
    reply: str
    started_at: Timestamp
    completed_at: Timestamp | None
    provenance: Provenance
    notes: list[NoteOut]
    edits: list[NodeEdit]
    # Who sent the turn or made the merge when it was not the family's owner (an
    # editor of a shared family); null for the owner's own nodes.
    author: str | None = None
    # An imported node: the author its document recorded (the importer made the node).
    imported_author: str | None = None


class NoteIn(BaseModel):
    model_config = STRICT
    text: str = Field(min_length=1, max_length=MAX_NOTE, pattern=NO_NUL)
    codes: list[Code] = Field(default_factory=list, max_length=MAX_CODES)


class NotePatch(BaseModel):
    model_config = STRICT
    text: str | None = Field(default=None, min_length=1, max_length=MAX_NOTE, pattern=NO_NUL)
    codes: list[Code] | None = Field(default=None, max_length=MAX_CODES)


class CodeCount(BaseModel):
    code: str
    count: int


class BranchUsage(BaseModel):
    """What one branch's own steps used (the per-family summary)."""

    thread_id: str
    name: str | None
    nodes: int
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    tokens_estimated: bool
