"""Shares of a family: grants to named users and links (tokens stored hashed)."""

from __future__ import annotations

from sqlalchemy import and_, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import Conversation, ConversationBranch, Share, User
from haico.db.repositories.threads import listed


async def grants(s: AsyncSession, *, root_thread_id: str, grantee_id: int) -> list[Share]:
    """Every share (live or not) of the family to `grantee_id`."""
    stmt = select(Share).where(
        Share.root_thread_id == root_thread_id, Share.grantee_id == grantee_id
    )
    return list((await s.execute(stmt)).scalars())


async def thread_with_grants(
    s: AsyncSession, thread_id: str, *, user_id: int, for_update: bool = False
) -> tuple[Conversation, ConversationBranch | None, list[Share]] | None:
    """The thread with its branch row and, when `user_id` is not its owner, every share
    of its family to `user_id`: one query, so the access check costs a grantee no
    round trip more than the owner (the owner's join finds nothing to read)."""
    stmt = (
        select(Conversation, ConversationBranch, Share)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .outerjoin(
            Share,
            and_(
                Share.root_thread_id == Conversation.root_thread_id,
                Share.grantee_id == user_id,
                Conversation.user_id != user_id,
            ),
        )
        .where(Conversation.thread_id == thread_id)
    )
    if for_update:
        stmt = stmt.with_for_update(of=Conversation)
    rows = (await s.execute(stmt)).all()
    if not rows:
        return None
    conv, branch, _ = rows[0]
    return conv, branch, [row[2] for row in rows if row[2] is not None]


async def by_id(s: AsyncSession, share_id: int) -> Share | None:
    return await s.get(Share, share_id)


async def by_uid(s: AsyncSession, uid: str) -> Share | None:
    """The share a client names (`Share.uid`)."""
    return (await s.execute(select(Share).where(Share.uid == uid))).scalar_one_or_none()


async def link_by_token_hash(s: AsyncSession, token_hash: str) -> tuple[Share, User] | None:
    stmt = (
        select(Share, User)
        .join(User, User.id == Share.grantee_id)
        .where(Share.token_hash == token_hash)
    )
    row = (await s.execute(stmt)).first()
    return (row[0], row[1]) if row is not None else None


async def of_family(s: AsyncSession, root_thread_id: str) -> list[tuple[Share, User]]:
    """The family's shares with their grantees, oldest first."""
    stmt = (
        select(Share, User)
        .join(User, User.id == Share.grantee_id)
        .where(Share.root_thread_id == root_thread_id)
        .order_by(Share.id)
    )
    return [(sh, u) for sh, u in (await s.execute(stmt)).all()]


async def shared_with(
    s: AsyncSession, grantee_id: int
) -> list[tuple[Conversation, ConversationBranch | None, Share, User]]:
    """The listed threads of every family shared with `grantee_id` (revoked shares
    included: the caller filters live ones), with the share and the family's owner."""
    stmt = (
        select(Conversation, ConversationBranch, Share, User)
        .join(Share, Share.root_thread_id == Conversation.root_thread_id)
        .join(User, User.id == Conversation.user_id)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .where(Share.grantee_id == grantee_id, Share.revoked_at.is_(None), listed())
        .order_by(Conversation.updated_at.desc(), Conversation.thread_id)
    )
    return [(c, b, sh, u) for c, b, sh, u in (await s.execute(stmt)).all()]


async def unrevoked_of(s: AsyncSession, grantee_id: int) -> list[Share]:
    """The grantee's shares that were not revoked (expiry is the caller's to check)."""
    stmt = select(Share).where(Share.grantee_id == grantee_id, Share.revoked_at.is_(None))
    return list((await s.execute(stmt)).scalars())
