"""`haico users (create NAME | list | token NAME --rotate | delete NAME [--yes])`:
the users and their API tokens, for administrators (used when HAICO_AUTH=token).

Exit 0 on success, 1 on a domain error (unknown user, name taken) or a refused
confirmation, 2 on a usage error (a token cannot be shown again, only rotated).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from haico.config import Settings

if TYPE_CHECKING:
    from haico.db.engine import Database
    from haico.services.access.users import DeletedUser

COMMANDS = ("users",)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    users_p = sub.add_parser(
        "users",
        help="manage users and their API tokens",
        description="Users and their API tokens (used when HAICO_AUTH=token). Tokens are "
        "stored hashed: each is printed once, alone on the last line, when it is made. "
        "An unknown user is an error (exit code 1).",
    )
    users_sub = users_p.add_subparsers(dest="users_command", required=True)
    create_p = users_sub.add_parser(
        "create",
        help="create a user and print its API token",
        description="Create user NAME and print a new API token for it, alone on the last line.",
    )
    create_p.add_argument("name")
    users_sub.add_parser(
        "list",
        help="list users (name, created, number of tokens; never a token)",
        description="One line per user, tab-separated after a header: name, when it was "
        "created (UTC), how many API tokens it has. Token values are never shown.",
    )
    token_p = users_sub.add_parser(
        "token",
        help="issue a new API token for a user (--rotate); its old tokens stop working",
        description="With --rotate: give user NAME one new API token, printed alone on the "
        "last line, and revoke every token it had before, in one transaction. Requests "
        "with an old token get 401 from then on. Tokens are stored hashed, so an existing "
        "token cannot be shown again.",
    )
    token_p.add_argument("name")
    token_p.add_argument(
        "--rotate",
        action="store_true",
        help="replace every token of the user with one new token (required)",
    )
    delete_p = users_sub.add_parser(
        "delete",
        help="delete a user, its tokens and all its conversations",
        description="Delete user NAME for good: its API tokens stop working at once (401), "
        "and every conversation it owns is deleted with it (the database cascades from "
        "the user to its conversations, their workspaces, history, branches and "
        "snapshots); their transcripts are then removed from the checkpointer. Entries "
        "of the event log age out with HAICO_EVENT_LOG_WINDOW_DAYS. This cannot be "
        "undone. On a terminal it asks first, unless --yes is given.",
    )
    delete_p.add_argument("name")
    delete_p.add_argument("-y", "--yes", action="store_true", help="do not ask for confirmation")


def run(settings: Settings, args: argparse.Namespace) -> int:
    """`haico users …`: 0 on success, 1 on a domain error (unknown user, name taken)."""
    from haico.errors import DomainError

    command: str = args.users_command
    if command == "token" and not args.rotate:
        print(
            "error: tokens are stored hashed and cannot be shown again; "
            f"`haico users token {args.name} --rotate` issues a new one "
            "(and revokes every earlier token of that user)",
            file=sys.stderr,
        )
        return 2
    if command == "delete" and not args.yes and sys.stdin.isatty():
        answer = input(f"Delete user {args.name!r}, its tokens and all its conversations? [y/N] ")
        if answer.strip().lower() not in {"y", "yes"}:
            print("nothing deleted", file=sys.stderr)
            return 1
    try:
        return asyncio.run(_run(settings, args))
    except DomainError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


def _format_time(value: datetime) -> str:
    """A stored timestamp as RFC 3339 UTC (SQLite hands them back without an offset;
    they are written in UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def _run(settings: Settings, args: argparse.Namespace) -> int:
    from haico.db.engine import Database
    from haico.services.access import users

    command: str = args.users_command
    db = Database(settings.sql_url)
    try:
        if command == "create":
            _, token = await users.create(db, name=args.name)
            print(f"created user {args.name}; its API token (shown once):")
            print(token)
        elif command == "list":
            rows = await users.list_users(db)
            print("NAME\tCREATED\tTOKENS")
            for row in rows:
                print(f"{row.name}\t{_format_time(row.created_at)}\t{row.tokens}")
        elif command == "token":
            token, revoked = await users.rotate_token(db, name=args.name)
            print(
                f"new API token for {args.name} (shown once); "
                f"{revoked} earlier token(s) revoked and no longer accepted:"
            )
            print(token)
        elif command == "delete":
            deleted = await _delete(settings, db, args.name)
            print(
                f"deleted user {deleted.name}: {deleted.tokens} token(s) revoked, "
                f"{len(deleted.thread_ids)} conversation thread(s) deleted"
            )
            if deleted.transcript_failures:
                print(
                    "warning: the transcripts of "
                    f"{len(deleted.transcript_failures)} thread(s) could not be removed "
                    "from the checkpointer (unreachable now; see the log)",
                    file=sys.stderr,
                )
        else:
            return 2
        return 0
    finally:
        await db.dispose()


async def _delete(settings: Settings, db: Database, name: str) -> DeletedUser:
    """Delete the user, then its transcripts through the CLI's runtime."""
    from haico.cli.runtime import agent_runtime
    from haico.services.access import users

    async with agent_runtime(settings, db) as runtime:
        return await users.delete(db, name=name, runtime=runtime)
