"""Wire shapes of `POST …/{thread_id}/merge` (bring a path back: merge and pick)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from haico.schemas.common import NO_NUL, STRICT

MergeMode = Literal["pick", "merge"]
MergeSurface = Literal["objective", "title", "document", "preference", "todo", "artifact"]
# A change's value on one side: a scalar or a document hunk (text), an item's fields
# with its position, an artifact's title and kind; null where that side has none.
MergeValue = str | dict[str, Any] | None
# The most changes a request may resolve (a plan lists at most a few per item).
MAX_RESOLUTIONS = 10_000
# The most lines one line-by-line pick may name (a hunk has its two sides' lines).
MAX_PICKED_LINES = 20_000


class PickedLine(BaseModel):
    """One line of a document hunk: the `n`th (from 0) of the target's (`ours`) or the
    source's (`theirs`) lines of that hunk."""

    model_config = STRICT
    side: Literal["ours", "theirs"]
    n: int = Field(ge=0, le=MAX_PICKED_LINES)


class LinePick(BaseModel):
    """A document conflict settled line by line: the hunk becomes exactly these lines,
    in this order (each at most once)."""

    model_config = STRICT
    lines: list[PickedLine] = Field(max_length=MAX_PICKED_LINES)


MergeResolution = Literal["ours", "theirs", "both"] | LinePick


class MergeIn(BaseModel):
    """`source`: any node the caller owns. `expected_head_turn_id`: absent = no
    assertion, null = the head is the baseline. `label`: how the client shows the
    source (`3.1`), used in the merge node's description. `resolutions` maps a change
    id to `ours` or `theirs` (or, for a document change, `both`: the target's lines
    then the source's, or a `LinePick` of the lines to keep), or
    `<change id>.<field>` (an item change's field, say `todo:<uid>.text`) to settle
    one field of an item on its own."""

    model_config = STRICT
    source: str = Field(max_length=80, pattern=NO_NUL)
    mode: MergeMode
    preview: bool = False
    resolutions: dict[str, MergeResolution] | None = Field(default=None, max_length=MAX_RESOLUTIONS)
    expected_head_turn_id: str | None = Field(default=None, max_length=80, pattern=NO_NUL)
    force: bool = False
    label: str | None = Field(default=None, max_length=40, pattern=r"^[0-9A-Za-z .:_-]*$")


class MergeChange(BaseModel):
    """One change the source would bring. `ours` is the target's value, `theirs` the
    source's, `base` the one both started from; `fields` names the fields of an item
    that differ (`position` among them when it moved)."""

    id: str
    surface: MergeSurface
    uid: str | None
    kind: Literal["add", "remove", "change"]
    base: MergeValue
    ours: MergeValue
    theirs: MergeValue
    conflict: bool
    fields: list[str] = Field(default_factory=list)
    # The fields of an item both sides changed differently: each can be resolved on
    # its own, as `resolutions["<id>.<field>"]`.
    conflict_fields: list[str] = Field(default_factory=list)


class MergePlan(BaseModel):
    """`base`: the node both sides started from (null: none, then everything the source
    has counts as added); `target`: the node whose workspace the merge changes (the
    target thread's tip)."""

    mode: MergeMode
    source: str
    base: str | None
    target: str | None
    changes: list[MergeChange]


class MergeOut(BaseModel):
    """The new merge node (`node_id`) on the target thread, its parent (the head it
    moved from), the source node and the plan it applied."""

    node_id: str
    parent_node_id: str | None
    merged_from: str
    mode: MergeMode
    description: str
    plan: MergePlan


class RevertIn(BaseModel):
    """`expected_head_turn_id`: absent = no assertion, null = the head is the baseline."""

    model_config = STRICT
    expected_head_turn_id: str | None = Field(default=None, max_length=80, pattern=NO_NUL)


class RevertOut(BaseModel):
    """The new node (`node_id`) that undid the merge node `reverted`, on the same
    thread; `parent_node_id` is the merge node (the head it moved from)."""

    node_id: str
    parent_node_id: str | None
    reverted: str
    description: str
