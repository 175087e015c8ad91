"""Wire shapes for sharing a family: a share as created and listed, and the role a
shared conversation is listed with."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from haico.schemas.common import NO_NUL
from haico.schemas.conversations import ConversationOut

ShareRole = Literal["viewer", "commenter", "editor"]


class ShareCreate(BaseModel):
    # Not strict: `expires_at` arrives as an ISO 8601 string.
    model_config = ConfigDict(extra="forbid")

    role: ShareRole
    user: str | None = Field(default=None, min_length=1, max_length=200, pattern=NO_NUL)
    expires_at: datetime | None = None


class ShareOut(BaseModel):
    id: str = Field(description="`shr_` and 24 random hex digits")
    role: ShareRole
    user: str | None = Field(description="the grantee's name; null for a link")
    token: str | None = Field(
        description="a link's secret (`sh_…`), only in the answer that created it"
    )
    created_at: datetime
    expires_at: datetime | None
    revoked: bool


class SharedConversationOut(ConversationOut):
    """A conversation of someone else's family, with the caller's role on it."""

    role: ShareRole
    owner: str
