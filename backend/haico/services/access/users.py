"""Users and API tokens: create, list, rotate a user's token, delete a user.

Tokens are stored only as SHA-256 hashes, so a token is shown once, when it is made;
`haico users list` shows how many tokens a user has, never a token.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from haico.db.engine import Database
from haico.db.models import User
from haico.db.repositories import users as repo
from haico.db.repositories.users import UserSummary
from haico.errors import Conflict, InvalidInput, NotFound, Unauthorized
from haico.services.access.principal import Principal

if TYPE_CHECKING:
    from haico.agent.runtime import AgentRuntime

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeletedUser:
    """What `delete` removed."""

    name: str
    tokens: int
    thread_ids: list[str] = field(default_factory=list)
    # Threads whose transcripts could not be removed from the checkpointer.
    transcript_failures: list[str] = field(default_factory=list)


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> str:
    return "hk_" + secrets.token_urlsafe(32)


async def create(db: Database, *, name: str) -> tuple[Principal, str]:
    """Create user `name` and return it with a fresh API token (shown once)."""
    name = name.strip()
    if not name or len(name) > 200:
        raise InvalidInput("name: must be 1 to 200 characters")
    if name.startswith("link:"):
        raise InvalidInput("name: 'link:' names belong to share links")
    token = new_token()
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


async def named(db: Database, name: str) -> Principal:
    """User `name`, as the command line acts for it."""
    async with db.read() as s:
        user = await repo.by_name(s, name)
    if user is None:
        raise NotFound(f"no user named {name!r}")
    return Principal(user.id, user.name)


async def with_id(db: Database, user_id: int) -> Principal:
    """The user row `user_id` (a family's owner, for the command line)."""
    async with db.read() as s:
        user = await s.get(User, user_id)
    if user is None:
        raise NotFound(f"no user {user_id}")
    return Principal(user.id, user.name)


async def authenticate(db: Database, *, token: str | None) -> Principal:
    if not token:
        raise Unauthorized("a bearer token is required")
    async with db.read() as s:
        user = await repo.by_token_hash(s, hash_token(token))
    if user is None or user.is_link:
        raise Unauthorized("unknown token")
    return Principal(user.id, user.name)


async def list_users(db: Database) -> list[UserSummary]:
    """Every user, oldest first, with how many API tokens it has (never the tokens)."""
    async with db.read() as s:
        return await repo.summaries(s)


async def rotate_token(db: Database, *, name: str) -> tuple[str, int]:
    """Give user `name` one fresh API token and revoke every token it had, in one
    transaction: when it commits the old tokens stop working (every request looks its
    token up). Returns the new token (shown once) and how many tokens were revoked."""
    token = new_token()
    async with db.transaction() as s:
        user = await repo.by_name_for_update(s, name)
        if user is None:
            raise NotFound(f"no user named {name!r}")
        revoked = await repo.replace_tokens(s, user.id, token_hash=hash_token(token))
    return token, revoked


async def delete(db: Database, *, name: str, runtime: AgentRuntime | None = None) -> DeletedUser:
    """Delete user `name`, its API tokens and every conversation it owns.

    One transaction deletes the user row; the database cascades (ON DELETE CASCADE) to
    its tokens and conversations and every row hanging off them (workspace, history,
    branches, snapshots). Their transcripts live in the checkpointer, outside that
    transaction: with `runtime` they are removed after the commit, best effort (a
    failure only leaves unreachable checkpoints behind, listed in the result).
    """
    async with db.transaction() as s:
        user = await repo.by_name_for_update(s, name)
        if user is None:
            raise NotFound(f"no user named {name!r}")
        tokens = await repo.count_tokens(s, user.id)
        threads = await repo.thread_ids(s, user.id)
        await repo.delete_user(s, user.id)
    failures: list[str] = []
    if runtime is not None:
        for thread_id in threads:
            try:
                await runtime.delete_thread(thread_id)
            except Exception:
                log.exception("could not remove the transcript of %s", thread_id)
                failures.append(thread_id)
    return DeletedUser(name, tokens, threads, failures)
