"""Users and their API tokens (stored as SHA-256 hashes)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import ApiToken, User


async def by_name(s: AsyncSession, name: str) -> User | None:
    return (await s.execute(select(User).where(User.name == name))).scalar_one_or_none()


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
