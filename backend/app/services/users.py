"""Users and API tokens."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from sqlalchemy import select

from app.db.engine import Database
from app.db.models import ApiToken, User
from app.errors import Conflict, InvalidInput, Unauthorized


@dataclass(frozen=True)
class Principal:
    id: int
    name: str


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


async def create(db: Database, *, name: str) -> tuple[Principal, str]:
    """Create user `name` and return it with a fresh API token (shown once)."""
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidInput("name: must be 1 to 200 characters")
    token = "hk_" + secrets.token_urlsafe(32)
    async with db.transaction() as s:
        if (await s.execute(select(User).where(User.name == name))).scalar_one_or_none():
            raise Conflict(f"user {name!r} already exists")
        user = User(name=name)
        s.add(user)
        await s.flush()
        s.add(ApiToken(user_id=user.id, token_hash=hash_token(token)))
    return Principal(user.id, user.name), token


async def ensure_local(db: Database, *, name: str) -> Principal:
    """The single user that every request acts as when auth is off."""
    async with db.transaction() as s:
        user = (await s.execute(select(User).where(User.name == name))).scalar_one_or_none()
        if user is None:
            user = User(name=name)
            s.add(user)
            await s.flush()
        return Principal(user.id, user.name)


async def authenticate(db: Database, *, token: str | None) -> Principal:
    if not token:
        raise Unauthorized("a bearer token is required")
    async with db.read() as s:
        stmt = (
            select(User)
            .join(ApiToken, ApiToken.user_id == User.id)
            .where(ApiToken.token_hash == hash_token(token))
        )
        user = (await s.execute(stmt)).scalar_one_or_none()
    if user is None:
        raise Unauthorized("unknown token")
    return Principal(user.id, user.name)
