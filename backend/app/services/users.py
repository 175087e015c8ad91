"""Users and API tokens."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from app.db.engine import Database
from app.db.repositories import users as repo
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
        if await repo.by_name(s, name) is not None:
            raise Conflict(f"user {name!r} already exists")
        user = await repo.add(s, name, token_hash=hash_token(token))
    return Principal(user.id, user.name), token


async def ensure_local(db: Database, *, name: str) -> Principal:
    """The single user that every request acts as when auth is off."""
    async with db.transaction() as s:
        user = await repo.by_name(s, name) or await repo.add(s, name)
        return Principal(user.id, user.name)


async def authenticate(db: Database, *, token: str | None) -> Principal:
    if not token:
        raise Unauthorized("a bearer token is required")
    async with db.read() as s:
        user = await repo.by_token_hash(s, hash_token(token))
    if user is None:
        raise Unauthorized("unknown token")
    return Principal(user.id, user.name)
