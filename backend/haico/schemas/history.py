"""Moving through a family's history: branching from a turn (with an edited preview
of the workspace), forking, checking a node out, and the head that results."""

from __future__ import annotations

from pydantic import BaseModel, Field

from haico.domain import TITLE_CHARS
from haico.schemas.common import MAX_DOC, MAX_INT, MAX_TEXT, NO_NUL, STRICT
from haico.schemas.workspace import MAX_DEPTH


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
