"""`haico share THREAD (--user NAME | --link) [--role ROLE] [--expires WHEN]`: share a
family, the same as `POST …/{thread_id}/shares`, for scripts and administrators.

It acts as the family's owner (the CLI runs next to the database, as `haico users`
does). The new share goes to stdout as JSON; a link's `token` is in it, the only time
it is shown. Exit 0 on success, 1 on an error (its code and message on stderr), 2 on a
usage error. With `HAICO_AUTH=none` there is nobody to share with: exit 1,
`sharing_needs_token_auth`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime
from typing import TYPE_CHECKING

from haico.config import Settings

if TYPE_CHECKING:
    from haico.schemas.shares import ShareCreate

COMMANDS = ("share",)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    share_p = sub.add_parser(
        "share",
        help="share a family with a user, or make a review link",
        description="Grant ROLE on THREAD's whole family to user NAME (--user), or make "
        "a link (--link: viewer or commenter) whose token is printed once. Prints the "
        "share as JSON.",
    )
    share_p.add_argument("thread_id")
    who = share_p.add_mutually_exclusive_group(required=True)
    who.add_argument("--user", help="the user to share with")
    who.add_argument("--link", action="store_true", help="make a link (at most commenter)")
    share_p.add_argument(
        "--role", choices=("viewer", "commenter", "editor"), default="viewer", help="default viewer"
    )
    share_p.add_argument("--expires", help="when the share ends (ISO 8601, with a zone)")


def run(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from haico.errors import DomainError
    from haico.schemas.shares import ShareCreate

    if settings.auth != "token":
        print("error: sharing_needs_token_auth: set HAICO_AUTH=token", file=sys.stderr)
        return 1
    try:
        expires = datetime.fromisoformat(args.expires) if args.expires else None
        body = ShareCreate(role=args.role, user=args.user, expires_at=expires)
    except (ValueError, ValidationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        print(asyncio.run(_run(settings, args.thread_id, body)))
    except DomainError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    return 0


async def _run(settings: Settings, thread_id: str, body: ShareCreate) -> str:
    from haico.db.engine import Database
    from haico.db.repositories import threads
    from haico.errors import NotFound
    from haico.services.access import users
    from haico.services.sharing import shares

    db = Database(settings.sql_url, limits=settings.limits())
    try:
        async with db.read() as s:
            conv = await threads.get_thread(s, thread_id)
        if conv is None or conv.deleted_at is not None:
            raise NotFound(f"conversation {thread_id} not found")
        owner = await users.with_id(db, conv.user_id)
        out = await shares.create(db, principal=owner, thread_id=thread_id, body=body)
        return out.model_dump_json()
    finally:
        await db.dispose()
