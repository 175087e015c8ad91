"""Users and their API tokens (stored as SHA-256 hashes)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import delete, func, insert, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import ApiToken, Conversation, User


@dataclass(frozen=True)
class UserSummary:
    """A user as `haico users list` shows it: never a token, only how many it has."""

    id: int
    name: str
    created_at: datetime
    tokens: int


async def by_name(s: AsyncSession, name: str) -> User | None:
    return (await s.execute(select(User).where(User.name == name))).scalar_one_or_none()


async def name_of(s: AsyncSession, user_id: int) -> str:
    """A user's name ("" for no such user)."""
    return (await s.scalar(select(User.name).where(User.id == user_id))) or ""


async def by_name_for_update(s: AsyncSession, name: str) -> User | None:
    """The user named `name`, its row locked for the rest of the transaction (on
    PostgreSQL; SQLite serialises writers anyway), so that two rotations or a rotation
    and a delete of one user never interleave."""
    stmt = select(User).where(User.name == name).with_for_update()
    return (await s.execute(stmt)).scalar_one_or_none()


async def by_token_hash(s: AsyncSession, token_hash: str) -> User | None:
    stmt = (
        select(User)
        .join(ApiToken, ApiToken.user_id == User.id)
        .where(ApiToken.token_hash == token_hash)
    )
    return (await s.execute(stmt)).scalar_one_or_none()


async def add(s: AsyncSession, name: str, *, token_hash: str | None = None) -> User:
    user = User(name=name)
    s.add(user)
    await s.flush()
    if token_hash is not None:
        s.add(ApiToken(user_id=user.id, token_hash=token_hash))
    return user


async def add_links(s: AsyncSession, names: list[str]) -> dict[str, int]:
    """Users that never sign in with an API token (`is_link`: a share link's, a study
    participant's), one statement for all of them; their ids by name."""
    if not names:
        return {}
    stmt = (
        insert(User)
        .values([{"name": name, "is_link": True} for name in names])
        .returning(User.id, User.name)
    )
    return {name: user_id for user_id, name in (await s.execute(stmt)).all()}


async def summaries(s: AsyncSession) -> list[UserSummary]:
    """Every user, oldest first, with its number of API tokens."""
    stmt = (
        select(User.id, User.name, User.created_at, func.count(ApiToken.id))
        .outerjoin(ApiToken, ApiToken.user_id == User.id)
        .where(User.is_link.is_(False))
        .group_by(User.id, User.name, User.created_at)
        .order_by(User.id)
    )
    return [UserSummary(*row) for row in (await s.execute(stmt)).all()]


async def replace_tokens(s: AsyncSession, user_id: int, *, token_hash: str) -> int:
    """Delete every token of the user and add one with `token_hash`; the number of
    tokens deleted."""
    deleted = await s.execute(delete(ApiToken).where(ApiToken.user_id == user_id))
    s.add(ApiToken(user_id=user_id, token_hash=token_hash))
    await s.flush()
    return int(getattr(deleted, "rowcount", 0) or 0)


async def count_tokens(s: AsyncSession, user_id: int) -> int:
    stmt = select(func.count(ApiToken.id)).where(ApiToken.user_id == user_id)
    return int((await s.execute(stmt)).scalar_one())


async def thread_ids(s: AsyncSession, user_id: int) -> list[str]:
    """Every thread (conversation row) the user owns, deleted and hidden ones included."""
    stmt = select(Conversation.thread_id).where(Conversation.user_id == user_id)
    return list((await s.execute(stmt)).scalars())


async def delete_user(s: AsyncSession, user_id: int) -> None:
    """Delete the user row; the database cascades (ON DELETE CASCADE) to its tokens, its
    conversations and every row hanging off them."""
    await s.execute(delete(User).where(User.id == user_id))
