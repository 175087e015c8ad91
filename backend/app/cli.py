"""`haico serve | migrate | users create NAME`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from app.config import Settings, get_settings

BACKEND_DIR = Path(__file__).resolve().parent.parent


def alembic_config(settings: Settings) -> object:
    from alembic.config import Config

    cfg = Config(str(BACKEND_DIR / "alembic.ini"))
    cfg.set_main_option("script_location", str(BACKEND_DIR / "alembic"))
    cfg.set_main_option("sqlalchemy.url", settings.sql_url.replace("%", "%%"))
    return cfg


def migrate(settings: Settings) -> None:
    """Bring the SQL schema to head, then let the checkpointer create its tables."""
    from alembic import command

    settings.data_dir.mkdir(parents=True, exist_ok=True)
    command.upgrade(alembic_config(settings), "head")  # type: ignore[arg-type]
    from app.agent.checkpointer import setup_checkpointer

    asyncio.run(setup_checkpointer(settings))


def _users_create(settings: Settings, name: str) -> int:
    from app.db.engine import Database
    from app.errors import DomainError
    from app.services import users

    async def run() -> str:
        db = Database(settings.sql_url)
        try:
            _, token = await users.create(db, name=name)
            return token
        finally:
            await db.dispose()

    try:
        token = asyncio.run(run())
    except DomainError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1
    print(f"created user {name}; its API token (shown once):")
    print(token)
    return 0


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
                "log_entries_dropped": report.log_entries_dropped,
                "pruned_turn_ids": report.pruned_turn_ids,
                "checkpoint_failures": report.checkpoint_failures,
            },
            indent=2,
        )
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="haico", description="HAICO co-construction studio")
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve the API, the AHP host and the studio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--no-migrate", action="store_true", help="do not bring the schema up to date first"
    )
    sub.add_parser("migrate", help="bring the database schema up to date")
    sub.add_parser(
        "janitor", help="reclaim half-built branches, orphaned drafts and old log entries once"
    )
    users_p = sub.add_parser("users", help="manage users")
    users_sub = users_p.add_subparsers(dest="users_command", required=True)
    create_p = users_sub.add_parser("create", help="create a user and print an API token")
    create_p.add_argument("name")
    args = parser.parse_args(argv)

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = get_settings()
    if args.command == "migrate":
        migrate(settings)
        print("schema is up to date")
        return 0
    if args.command == "janitor":
        migrate(settings)
        return _janitor(settings)
    if args.command == "users":
        migrate(settings)
        return _users_create(settings, args.name)
    if args.command == "serve":
        import uvicorn

        from app.main import create_app

        if not args.no_migrate:
            migrate(settings)
        uvicorn.run(create_app(settings), host=args.host, port=args.port, log_level="info")
        return 0
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
