"""A conversation (one thread of a family) as listed and read, created and renamed."""

from __future__ import annotations

from pydantic import BaseModel, Field

from haico.domain import NEW_THREAD_ID, TITLE_CHARS
from haico.schemas.common import MAX_TEXT, NO_NUL, STRICT, Timestamp


class ForkedFrom(BaseModel):
    thread_id: str
    turn_index: int


class FamilyStudy(BaseModel):
    """The study a participant's family belongs to, as its reader stands on it."""

    id: str
    name: str
    # owner: reveals the study's codings; coder or viewer: a member of the study.
    role: str


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
    # Coding: every coder sees every coding of the family (false: blind). The family's
    # root holds it; the owner sets it with `PATCH {reveal_codings}`. A study's family
    # answers its study's flag (when read alone, `GET /api/conversations/{id}`).
    reveal_codings: bool = False
    # A study's family, read alone by the study's owner or a member: its study.
    study: FamilyStudy | None = None


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
    # Coding: reveal every coder's codings to every coder of the family (the owner's;
    # on a study's family, the study's owner's, for every family of the study).
    reveal_codings: bool | None = None
