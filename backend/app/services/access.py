"""The one access check: who may do what on a family.

Every service that touches a thread asks `conversations.get_owned` (or `check_owned` on
a row it already read) for the thread with the role it `need`s. This module knows the
roles and answers what role a user holds:

- the family's owner holds `OWNER` (no query: the conversation row says so);
- a share (`shares`, on the family's root) grants `VIEWER`, `COMMENTER` or `EDITOR` to a
  named user or to a link's own user; the highest live one counts;
- revoked or expired shares, and no live one → `Unauthorized` (401); no share at all →
  `Forbidden` (403), as for any stranger.

What each need covers: `VIEWER` every read of the family; `COMMENTER` notes too;
`EDITOR` turns, workspace edits, checkout, branch, merge, replay, names, archive;
`OWNER` deleting the family and managing its shares.
"""

from __future__ import annotations

from datetime import UTC, datetime
from enum import IntEnum

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Conversation, Share
from app.db.repositories import shares as repo
from app.errors import Forbidden, Unauthorized


class Role(IntEnum):
    VIEWER = 1
    COMMENTER = 2
    EDITOR = 3
    OWNER = 4

    @property
    def wire(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, wire: str) -> Role:
        return cls[wire.upper()]


def aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive (they were written in UTC)."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def is_live(revoked_at: datetime | None, expires_at: datetime | None, *, at: datetime) -> bool:
    return revoked_at is None and (expires_at is None or aware(expires_at) > at)


async def role_of(
    s: AsyncSession, conv: Conversation, *, user_id: int, grants: list[Share] | None = None
) -> Role:
    """The role `user_id` holds on `conv`'s family: 401 when its shares were all revoked
    or have expired, 403 when it has none. `grants`: the caller's shares of the family,
    when read already (`shares.thread_with_grants`)."""
    if conv.user_id == user_id:
        return Role.OWNER
    if grants is None:
        grants = await repo.grants(s, root_thread_id=conv.root_thread_id, grantee_id=user_id)
    at = datetime.now(UTC)
    live = [Role.of(g.role) for g in grants if is_live(g.revoked_at, g.expires_at, at=at)]
    if live:
        return max(live)
    if grants:
        raise Unauthorized("your share of this conversation was revoked or has expired")
    raise Forbidden(f"conversation {conv.thread_id} belongs to another user")


async def require(
    s: AsyncSession,
    conv: Conversation,
    *,
    user_id: int,
    need: Role,
    grants: list[Share] | None = None,
) -> Role:
    """`role_of`, refused with 403 when the role is below `need`."""
    role = await role_of(s, conv, user_id=user_id, grants=grants)
    if role < need:
        raise Forbidden(f"your role on this conversation ({role.wire}) does not allow this")
    return role
