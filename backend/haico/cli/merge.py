"""`haico merge THREAD SOURCE [--pick] [--preview]`: bring a node's work into a thread,
the same as `POST …/{thread_id}/merge`, for scripts.

It acts as a user: the local user when auth is off, else the one `--user NAME` names.
The answer goes to stdout as JSON: the plan (`--preview`) or the new merge node. Exit
0 on success, 1 on an error (its code and message on stderr; a conflict also prints
the plan to stdout, so a script can choose resolutions with `--resolve ID=theirs`), 2
on a usage error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import TYPE_CHECKING, Literal, cast

from haico.config import Settings

if TYPE_CHECKING:
    from haico.schemas.merge import MergeIn

COMMANDS = ("merge",)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    merge_p = sub.add_parser(
        "merge",
        help="bring a node's work into a thread as one new node (merge or pick)",
        description="Bring SOURCE (a node id, th_…:k) into THREAD's workspace as one new "
        "node: by default what SOURCE's path changed since the newest node it shares with "
        "THREAD (merge), with --pick only the change SOURCE itself made. Prints the new "
        "node (or, with --preview, the plan) as JSON.",
    )
    merge_p.add_argument("thread_id")
    merge_p.add_argument("source")
    merge_p.add_argument("--pick", action="store_true", help="bring only SOURCE's own change")
    merge_p.add_argument("--preview", action="store_true", help="print the plan; write nothing")
    merge_p.add_argument(
        "--resolve",
        action="append",
        default=[],
        metavar="CHANGE=ours|theirs",
        help="settle a change of the plan (repeatable)",
    )
    merge_p.add_argument(
        "--force", action="store_true", help="discard an edited restored view if needed"
    )
    merge_p.add_argument("--user", help="act as this user (default: the local user)")


def _resolutions(pairs: list[str]) -> dict[str, Literal["ours", "theirs"]] | None:
    out: dict[str, Literal["ours", "theirs"]] = {}
    for pair in pairs:
        change, _, side = pair.rpartition("=")
        if not change or side not in ("ours", "theirs"):
            raise ValueError(f"--resolve {pair!r}: expected CHANGE=ours or CHANGE=theirs")
        out[change] = cast(Literal["ours", "theirs"], side)
    return out or None


def run(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from haico.errors import DomainError
    from haico.schemas.merge import MergeIn

    name = args.user or (settings.local_user_name if settings.auth == "none" else None)
    if name is None:
        print("error: --user NAME is required when HAICO_AUTH=token", file=sys.stderr)
        return 2
    try:
        body = MergeIn(
            source=args.source,
            mode="pick" if args.pick else "merge",
            preview=args.preview,
            resolutions=_resolutions(args.resolve),
            force=args.force,
        )
    except (ValueError, ValidationError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        print(asyncio.run(_run(settings, name, args.thread_id, body)))
    except DomainError as exc:
        if "plan" in exc.data:
            print(json.dumps(exc.data["plan"]))
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    return 0


async def _run(settings: Settings, user_name: str, thread_id: str, body: MergeIn) -> str:
    from haico.cli.runtime import agent_runtime
    from haico.db.engine import Database
    from haico.services.access.users import named
    from haico.services.merge import service

    db = Database(settings.sql_url, limits=settings.limits())
    try:
        async with agent_runtime(settings, db) as runtime:
            principal = await named(db, user_name)
            if body.preview:
                plan = await service.preview(
                    db, principal=principal, thread_id=thread_id, body=body
                )
                return plan.model_dump_json()
            out = await service.merge(
                db,
                runtime,
                principal=principal,
                thread_id=thread_id,
                body=body,
                retains=settings.history_retains_branches,
            )
            return out.model_dump_json()
    finally:
        await db.dispose()
