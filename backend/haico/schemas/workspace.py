"""The workspace a node holds (objective, document, preferences, todos, artifacts,
rejected decisions) as read, and the edits a request makes to it."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from haico.domain import TITLE_CHARS
from haico.schemas.common import MAX_DOC, MAX_INT, MAX_TEXT, NO_NUL, STRICT


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
