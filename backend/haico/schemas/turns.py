"""A turn as sent (the user's message) and a transcript message as read."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from haico.schemas.common import NO_NUL, STRICT

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
