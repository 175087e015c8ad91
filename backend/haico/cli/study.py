"""`haico study (create | list | export)`: studies for scripts and administrators.

- `haico study create --owner NAME (--file STUDY.json | --name N --condition C …)`:
  a new open study owned by NAME, the same as `POST /api/studies`; the study goes to
  stdout as JSON, its `join_token` (the join link's token) in it.
- `haico study list --owner NAME`: NAME's studies, one a line, tab-separated after a
  header: id, state, participants, name.
- `haico study export ID --out FILE`: the study's analysis CSV (`GET
  /api/studies/{id}/export.csv`), as its owner.

The CLI runs next to the database and acts as the study's owner, as `haico share`
acts as a family's. Exit 0 on success, 1 on an error (its code and message on
stderr), 2 on a usage error. Studies need token auth: with `HAICO_AUTH=none` every
subcommand exits 1, `studies_need_token_auth`.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from haico.config import Settings

if TYPE_CHECKING:
    from haico.db.engine import Database
    from haico.schemas.studies import StudyCreate

COMMANDS = ("study",)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    study_p = sub.add_parser(
        "study",
        help="create, list and export studies",
        description="Studies: one task given to many participants under conditions "
        "(token mode). Acts as the study's owner.",
    )
    study_sub = study_p.add_subparsers(dest="study_command", required=True)
    create_p = study_sub.add_parser(
        "create",
        help="create a study and print it as JSON (with its join token)",
        description="Create an open study owned by --owner, from --file (the body of "
        "POST /api/studies as JSON) or from the flags. Prints the study as JSON; its "
        "join_token makes the join link.",
    )
    create_p.add_argument("--owner", required=True, help="the user who owns the study")
    create_p.add_argument("--file", type=Path, help="the study as JSON (POST /api/studies)")
    create_p.add_argument("--name", help="the study's name (without --file)")
    create_p.add_argument(
        "--condition",
        action="append",
        default=[],
        metavar="NAME",
        help="a condition with every feature on; repeat for each (without --file)",
    )
    create_p.add_argument("--objective", help="the task's objective (without --file)")
    create_p.add_argument("--consent", help="the consent text (without --file)")
    list_p = study_sub.add_parser(
        "list",
        help="list a user's studies",
        description="One line per study the user owns, tab-separated after a header: "
        "id, state, participants, name.",
    )
    list_p.add_argument("--owner", required=True)
    export_p = study_sub.add_parser(
        "export",
        help="write a study's analysis CSV",
        description="Every node of every participant's family as a CSV row, participant "
        "and condition first (see docs/studies.md), written to --out.",
    )
    export_p.add_argument("study_id")
    export_p.add_argument("--out", type=Path, required=True, help="the CSV file to write")


def _body(args: argparse.Namespace) -> StudyCreate:
    """The study to create, from --file or from the flags (ValueError: a usage error)."""
    from haico.schemas.studies import StudyCreate

    if args.file is not None:
        if args.name or args.condition or args.objective or args.consent:
            raise ValueError("give either --file or the flags, not both")
        return StudyCreate.model_validate_json(args.file.read_bytes())
    if not args.name or not args.condition:
        raise ValueError("give --file, or --name and at least one --condition")
    return StudyCreate.model_validate(
        {
            "name": args.name,
            "conditions": [{"name": c} for c in args.condition],
            "task": {"objective": args.objective},
            "consent": args.consent,
        }
    )


def run(settings: Settings, args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from haico.errors import DomainError

    if settings.auth != "token":
        print("error: studies_need_token_auth: set HAICO_AUTH=token", file=sys.stderr)
        return 1
    body = None
    if args.study_command == "create":
        try:
            body = _body(args)
        except (OSError, ValueError, ValidationError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    try:
        return asyncio.run(_run(settings, args, body))
    except DomainError as exc:
        print(f"error: {exc.code}: {exc.message}", file=sys.stderr)
        return 1


async def _run(settings: Settings, args: argparse.Namespace, body: StudyCreate | None) -> int:
    from haico.db.engine import Database
    from haico.services.access import users
    from haico.services.studies import study

    db = Database(settings.sql_url, limits=settings.limits())
    try:
        if args.study_command == "export":
            return await _export(db, args.study_id, args.out)
        owner = await users.named(db, args.owner)
        if body is not None:
            print((await study.create(db, principal=owner, body=body)).model_dump_json())
            return 0
        print("id\tstate\tparticipants\tname")
        for s in await study.list_for(db, principal=owner):
            if s.role == "owner":
                print(f"{s.id}\t{s.state}\t{s.participants}\t{s.name}")
        return 0
    finally:
        await db.dispose()


async def _export(db: Database, study_id: str, out: Path) -> int:
    from haico.db.repositories import studies as repo
    from haico.errors import NotFound
    from haico.services.access import users
    from haico.services.studies import reports

    async with db.read() as s:
        found = await repo.get(s, study_id)
    if found is None:
        raise NotFound("no such study")
    owner = await users.with_id(db, found.owner_id)
    families = await reports.export_families(db, principal=owner, study_id=study_id)
    with out.open("w", encoding="utf-8", newline="") as f:
        async for chunk in reports.stream_csv(db, families):
            f.write(chunk)
    print(f"wrote {out} ({len(families)} participants)")
    return 0
