"""Wire shapes for finding one's way in a family: search, pruning suggestions and the
path a user last chose."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from haico.schemas.common import STRICT

SearchKind = Literal["user", "assistant", "document", "note", "branch"]


class SearchHit(BaseModel):
    node_id: str
    thread_id: str
    root_thread_id: str
    kind: SearchKind
    snippet: str


class SearchOut(BaseModel):
    results: list[SearchHit]


SuggestionReason = Literal["idle", "no_workspace_change", "same_as_sibling"]


class SuggestionOut(BaseModel):
    """A branch worth archiving, and why (`detail` is the sentence the studio shows)."""

    thread_id: str
    reason: SuggestionReason
    detail: str


class PathChoiceOut(BaseModel):
    fork_node_id: str
    child_node_id: str


class ChosenPathOut(BaseModel):
    """The path a user last looked at in a family: its last node (null: nothing chosen
    yet, or the node is gone) and the child chosen at each fork."""

    root_thread_id: str
    node_id: str | None
    choices: list[PathChoiceOut]


class ChosenPathIn(BaseModel):
    """Remember `node_id`'s path: at every fork above it, the child it goes through."""

    model_config = STRICT
    node_id: str = Field(max_length=80, pattern=r"^th_[0-9a-f]{32}:[0-9]{1,10}$")
