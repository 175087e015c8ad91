"""`haico serve [--host H] [--port P] [--workers N] [--no-migrate]`: the API, the AHP
host and the studio, from one process or N processes sharing the port.

Before anything else is imported, `reexec_allocator` lets `haico serve` re-execute
itself under the allocator the settings ask for (`haico.process.allocator`), so the
app is imported once, by the process that serves it.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from haico.cli.schema import migrate
from haico.config import Settings, get_settings
from haico.process import log_redaction

COMMANDS = ("serve",)
# On SIGTERM, how long open responses (a turn still streaming) may take before they
# are cut: under the 10 s a container engine waits before it kills the process.
GRACEFUL_SHUTDOWN_S = 8


def _workers(value: str) -> int:
    n = int(value)
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser("serve", help="serve the API, the AHP host and the studio")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8000)
    serve.add_argument(
        "--no-migrate", action="store_true", help="do not bring the schema up to date first"
    )
    serve.add_argument(
        "--workers",
        type=_workers,
        default=1,
        metavar="N",
        help="server processes sharing the port (N > 1 needs PostgreSQL: events cross "
        "processes through LISTEN/NOTIFY)",
    )


def reexec_allocator(argv: list[str]) -> int | None:
    """For `haico serve`: re-execute under jemalloc (`haico.process.allocator`) now, while
    only the settings are imported, so the app is imported once, in the final process;
    2 when the allocator asked for is missing, else None."""
    if argv[:1] != ["serve"]:
        return None
    from haico.process.allocator import AllocatorMissing, reexec_with_jemalloc

    try:
        reexec_with_jemalloc(get_settings().allocator)
    except AllocatorMissing as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return None


def run(settings: Settings, args: argparse.Namespace) -> int:
    import uvicorn

    from haico.main import create_app

    if args.workers > 1 and not settings.is_postgres:
        print(
            "error: --workers > 1 needs PostgreSQL (set HAICO_DATABASE_URL); "
            "the embedded SQLite store serves from one process",
            file=sys.stderr,
        )
        return 2
    if not args.no_migrate:
        migrate(settings, local_user=True)
    print(settings.where_data_lives(), flush=True)
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
        uvicorn.run("haico.main:create_app", factory=True, workers=args.workers, **server)
    else:
        uvicorn.run(create_app(settings), **server)
    return 0
