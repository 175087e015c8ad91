"""`haico serve [--workers N] | migrate | janitor | users (create NAME | list |
token NAME --rotate | delete NAME) | export THREAD_ID | import FILE | check |
backup FILE | restore FILE`.

This module imports no more than the settings before `main` runs: `haico serve` picks
its allocator first (`app.allocator`, possibly re-executing itself under jemalloc), so
the app is imported once, by the process that serves it."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app import (
    cli_maintenance,
    cli_merge,
    cli_replay,
    cli_schema,
    cli_share,
    cli_transfer,
    log_redaction,
)
from app.config import Settings, get_settings

if TYPE_CHECKING:
    from app.db.engine import Database
    from app.services.users import DeletedUser

BACKEND_DIR = Path(__file__).resolve().parent.parent


def alembic_config(settings: Settings) -> object:
    from alembic.config import Config

    cfg = Config(str(BACKEND_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(BACKEND_DIR / "alembic"))
    cfg.set_main_option("sqlalchemy.url", settings.sql_url.replace("%", "%%"))
    return cfg


# The PostgreSQL advisory lock key that serialises `haico migrate` across processes and
# replicas (an arbitrary constant: "HAICO" in ASCII).
MIGRATION_LOCK_KEY = 0x484149434F


@contextmanager
def migration_lock(settings: Settings) -> Iterator[None]:
    """Hold a session-level PostgreSQL advisory lock for the duration (nothing on SQLite,
    whose one file has one writer anyway). Replicas started at once migrate one after
    another; the later ones find the schema at head and do nothing."""
    if not settings.is_postgres:
        yield
        return
    import psycopg

    with psycopg.connect(settings.checkpoint_url, autocommit=True) as conn:
        # Polled, never a blocking pg_advisory_lock: a statement waiting on the lock is
        # an open transaction, and the holder's CREATE INDEX CONCURRENTLY (in the
        # checkpointer's setup) would wait for it to end: a deadlock nobody detects.
        try_lock = "SELECT pg_try_advisory_lock(%s)"
        while not _scalar(conn.execute(try_lock, (MIGRATION_LOCK_KEY,)).fetchone()):
            time.sleep(0.2)
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))


def _scalar(row: tuple[object, ...] | None) -> object:
    return row[0] if row else None


# On SIGTERM, how long open responses (a turn still streaming) may take before they
# are cut: under the 10 s a container engine waits before it kills the process.
GRACEFUL_SHUTDOWN_S = 8


def migrate(settings: Settings, *, local_user: bool = False) -> None:
    """Bring the SQL schema to head, then let the checkpointer create its tables, under
    the migration lock. With `local_user` and auth off, also create the local user
    there, so that several workers or replicas starting at once do not race to insert
    it (`haico migrate` and `haico serve` do)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with migration_lock(settings):
        if not cli_schema.at_head(settings):
            from alembic import command

            command.upgrade(alembic_config(settings), "head")  # type: ignore[arg-type]
        from app.agent.checkpointer import setup_checkpointer

        asyncio.run(setup_checkpointer(settings))
        if local_user and settings.auth == "none":
            asyncio.run(_ensure_local_user(settings))


async def _ensure_local_user(settings: Settings) -> None:
    from app.db.engine import Database
    from app.services import users

    db = Database(settings.sql_url)
    try:
        await users.ensure_local(db, name=settings.local_user_name)
    finally:
        await db.dispose()


def _format_time(value: datetime) -> str:
    """A stored timestamp as RFC 3339 UTC (SQLite hands them back without an offset;
    they are written in UTC)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _users(settings: Settings, args: argparse.Namespace) -> int:
    """`haico users …`: 0 on success, 1 on a domain error (unknown user, name taken)."""
    from app.errors import DomainError

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
        return asyncio.run(_users_run(settings, args))
    except DomainError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


async def _users_run(settings: Settings, args: argparse.Namespace) -> int:
    from app.db.engine import Database
    from app.services import users

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
            deleted = await _users_delete(settings, db, args.name)
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


async def _users_delete(settings: Settings, db: Database, name: str) -> DeletedUser:
    """Delete the user, then its transcripts through a runtime (no model is needed)."""
    from app.agent.models import OfflineChatModel
    from app.agent.runtime import AgentRuntime
    from app.services import users
    from app.services.agent_workspace import AgentWorkspace

    runtime = AgentRuntime(settings, AgentWorkspace(db))
    runtime.model = OfflineChatModel()
    await runtime.start()
    try:
        return await users.delete(db, name=name, runtime=runtime)
    finally:
        await runtime.close()


def _janitor(settings: Settings) -> int:
    import json

    from app.agent.runtime import AgentRuntime
    from app.db.engine import Database
    from app.services import janitor
    from app.services.agent_workspace import AgentWorkspace

    async def run() -> janitor.JanitorReport:
        db = Database(settings.sql_url)
        runtime = AgentRuntime(settings, AgentWorkspace(db))
        await runtime.start()
        try:
            return await janitor.run_once(
                db, runtime, max_age_seconds=settings.pending_max_age_seconds, settings=settings
            )
        finally:
            await runtime.close()
            await db.dispose()

    report = asyncio.run(run())
    print(
        json.dumps(
            {
                "pending_branches": report.pending_branches,
                "building_forks": report.building_forks,
                "orphan_drafts": report.orphan_drafts,
                "orphan_checkpoints": report.orphan_checkpoints,
                "log_entries_dropped": report.log_entries_dropped,
                "pruned_turn_ids": report.pruned_turn_ids,
                "checkpoint_failures": report.checkpoint_failures,
            },
            indent=2,
        )
    )
    return 0


def _serve_allocator(argv: list[str]) -> int | None:
    """For `haico serve`: re-execute under jemalloc (`app.allocator`) now, while only
    the settings are imported, so the app is imported once, in the final process;
    2 when the allocator asked for is missing, else None."""
    if argv[:1] != ["serve"]:
        return None
    from app.allocator import AllocatorMissing, reexec_with_jemalloc

    try:
        reexec_with_jemalloc(get_settings().allocator)
    except AllocatorMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    refused = _serve_allocator(argv)
    if refused is not None:
        return refused
    parser = argparse.ArgumentParser(prog="haico", description="HAICO co-construction studio")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the API, the AHP host and the studio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--no-migrate", action="store_true", help="do not bring the schema up to date first"
    )
    serve.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="server processes sharing the port (N > 1 needs PostgreSQL: events cross "
        "processes through LISTEN/NOTIFY)",
    )
    sub.add_parser("migrate", help="bring the database schema up to date")
    from app.ahp import cli_client

    cli_client.add_parser(sub)
    sub.add_parser(
        "janitor",
        help="reclaim half-built branches, orphaned drafts, orphan checkpoints and old log "
        "entries once",
    )
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
    cli_transfer.add_parsers(sub)
    cli_maintenance.add_parsers(sub)
    cli_merge.add_parsers(sub)
    cli_replay.add_parsers(sub)
    cli_share.add_parsers(sub)
    args = parser.parse_args(argv)

    if args.command == "ahp":
        return cli_client.main(args)
    logging.basicConfig(level=logging.INFO, format=log_redaction.FORMAT)
    log_redaction.protect_root()
    settings = get_settings()
    if args.command == "migrate":
        migrate(settings, local_user=True)
        print("schema is up to date")
        return 0
    if args.command == "janitor":
        migrate(settings)
        return _janitor(settings)
    if args.command == "users":
        migrate(settings)
        return _users(settings, args)
    if args.command in cli_transfer.COMMANDS:
        migrate(settings)
        return cli_transfer.run(settings, args)
    if args.command in cli_merge.COMMANDS:
        migrate(settings)
        return cli_merge.run(settings, args)
    if args.command in cli_replay.COMMANDS:
        migrate(settings, local_user=True)
        return cli_replay.run(settings, args)
    if args.command in cli_share.COMMANDS:
        migrate(settings)
        return cli_share.run(settings, args)
    if args.command in cli_maintenance.COMMANDS:
        return cli_maintenance.run(settings, args)
    if args.command == "serve":
        import uvicorn

        from app.main import create_app

        if args.workers < 1:
            parser.error("--workers must be at least 1")
        if args.workers > 1 and not settings.is_postgres:
            print(
                "error: --workers > 1 needs PostgreSQL (set HAICO_DATABASE_URL); "
                "the embedded SQLite store serves from one process",
                file=sys.stderr,
            )
            return 2
        if not args.no_migrate:
            migrate(settings, local_user=True)
        server: dict[str, Any] = {
            "host": args.host,
            "port": args.port,
            "log_level": "info",
            "log_config": log_redaction.log_config(),
            "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
            "timeout_keep_alive": settings.keep_alive_seconds,
        }
        if args.workers > 1:
            # Each worker process builds its own app from the environment (the same
            # settings as here): uvicorn needs an import string to start them.
            uvicorn.run("app.main:create_app", factory=True, workers=args.workers, **server)
        else:
            uvicorn.run(create_app(settings), **server)
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
