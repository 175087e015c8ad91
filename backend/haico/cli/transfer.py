"""`haico export THREAD_ID > file.json` and `haico import file.json`: a family as one
JSON document, the same as `GET …/export` and `POST /api/conversations/import`.
`haico export --csv [THREAD_ID] > nodes.csv`: the analysis CSV of a family (or of every
family of the user), the same as `GET …/export.csv` (`GET /api/export.csv`).

Both act as a user: the local user when auth is off, else the one `--user NAME`
names. A progress bar goes to stderr; the document (export) or the new root thread
id (import) to stdout. Exit 0 on success, 1 on an error the user can fix (unknown
thread or user, an invalid document), 2 on a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from haico.config import Settings

if TYPE_CHECKING:
    from haico.agent.runtime import AgentRuntime
    from haico.db.engine import Database

COMMANDS = ("export", "import")
BAR_WIDTH = 30


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    export_p = sub.add_parser(
        "export",
        help="write a conversation family as one JSON document to stdout",
        description="Write the whole family of THREAD_ID (every branch, node, transcript "
        "and workspace) as one versioned JSON document to stdout; progress goes to stderr.",
    )
    export_p.add_argument("thread_id", nargs="?")
    export_p.add_argument("--user", help="act as this user (default: the local user)")
    export_p.add_argument(
        "--csv",
        action="store_true",
        help="write the analysis CSV instead (one row per node; every family of the user "
        "when THREAD_ID is left out)",
    )
    import_p = sub.add_parser(
        "import",
        help="recreate an exported family as a new conversation family",
        description="Read an export document (FILE, or - for stdin) and recreate it as a new "
        "family with new ids; prints the new root thread id. An invalid document creates "
        "nothing.",
    )
    import_p.add_argument("file")
    import_p.add_argument("--user", help="act as this user (default: the local user)")


def progress_bar(label: str) -> Callable[[int, int], None]:
    """A callback drawing `label [####....] done/total` on stderr, ending with a newline."""

    def draw(done: int, total: int) -> None:
        filled = BAR_WIDTH * done // total if total else BAR_WIDTH
        bar = "#" * filled + "." * (BAR_WIDTH - filled)
        end = "\n" if done >= total else ""
        print(f"\r{label} [{bar}] {done}/{total}", end=end, file=sys.stderr, flush=True)

    return draw


def run(settings: Settings, args: argparse.Namespace) -> int:
    from haico.errors import DomainError

    name = args.user or (settings.local_user_name if settings.auth == "none" else None)
    if name is None:
        print("error: --user NAME is required when HAICO_AUTH=token", file=sys.stderr)
        return 2
    raw = ""
    if args.command == "export" and args.thread_id is None and not args.csv:
        print("error: THREAD_ID is required (or --csv for every family)", file=sys.stderr)
        return 2
    if args.command == "import":
        try:
            raw = sys.stdin.read() if args.file == "-" else Path(args.file).read_text()
        except OSError as exc:
            print(f"error: cannot read {args.file}: {exc}", file=sys.stderr)
            return 1
    try:
        return asyncio.run(_run(settings, args, name, raw))
    except DomainError as exc:
        print(f"error: {exc.message}", file=sys.stderr)
        return 1


async def _run(settings: Settings, args: argparse.Namespace, user_name: str, raw: str) -> int:
    from pydantic import ValidationError

    from haico.cli.runtime import agent_runtime
    from haico.db.engine import Database
    from haico.schemas.export import FamilyExport

    db = Database(settings.sql_url, limits=settings.limits())
    try:
        async with agent_runtime(settings, db) as runtime:
            if args.command == "export" and args.csv:
                return await _export_csv(db, user_name, args.thread_id)
            if args.command == "export":
                return await _export(db, runtime, user_name, args.thread_id)
            try:
                doc = FamilyExport.model_validate_json(raw)
            except ValidationError as exc:
                print(f"error: not a valid export document: {exc}", file=sys.stderr)
                return 1
            return await _import(db, runtime, user_name, doc)
    finally:
        await db.dispose()


async def _export(db: Database, runtime: AgentRuntime, user_name: str, thread_id: str) -> int:
    from haico.services.access import users
    from haico.services.transfer import export as family_export

    principal = await users.named(db, user_name)
    doc = await family_export.export_family(
        db, runtime, principal=principal, thread_id=thread_id, progress=progress_bar("export nodes")
    )
    sys.stdout.write(doc.model_dump_json())
    sys.stdout.write("\n")
    return 0


async def _export_csv(db: Database, user_name: str, thread_id: str | None) -> int:
    from haico.services.access import users
    from haico.services.reports import analysis_export

    principal = await users.named(db, user_name)
    if thread_id is None:
        roots = await analysis_export.user_families(db, principal=principal)
    else:
        roots = [await analysis_export.check_family(db, principal=principal, thread_id=thread_id)]
    total = await analysis_export.count_nodes(db, roots)
    draw = progress_bar("export rows")
    async for chunk in analysis_export.stream_csv(db, roots, progress=lambda n: draw(n, total)):
        sys.stdout.write(chunk)
    draw(total, total)
    return 0


async def _import(db: Database, runtime: AgentRuntime, user_name: str, doc: object) -> int:
    from haico.schemas.export import FamilyExport
    from haico.services.transfer import importing as family_import

    assert isinstance(doc, FamilyExport)
    from haico.services.access import users

    principal = await users.named(db, user_name)
    root = await family_import.import_family(
        db, runtime, principal=principal, doc=doc, progress=progress_bar("import threads")
    )
    coding = (
        f", {len(doc.codings)} coding(s) and {len(doc.judgments)} judgment(s)"
        if doc.codings or doc.judgments
        else ""
    )
    print(f"imported {len(doc.threads)} thread(s) and {len(doc.nodes)} node(s){coding} as:")
    print(root.thread_id)
    return 0
