"""Two nodes' workspaces compared: what changed from one to the other, surface by
surface, and who made each change since their common ancestor."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from haico.schemas.common import Timestamp
from haico.schemas.workspace import ArtifactSummary, PreferenceOut, RejectedOut, TodoOut


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
