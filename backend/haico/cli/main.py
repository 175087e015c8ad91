"""`haico COMMAND …`: the parser and the dispatch to the command modules of this
package (`serve`, `migrate`, `users`, `janitor`, `export`/`import`, `merge`, `replay`,
`share`, `study`, `check`/`backup`/`restore`, and the AHP client `ahp`).

Each command module has its `COMMANDS`, `add_parsers(sub)` and `run(settings, args)`.
Every module imported here imports no more than the settings at import time: `haico
serve` picks its allocator first (`serve.reexec_allocator`, possibly re-executing
itself under jemalloc), so the app is imported once, by the process that serves it."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from haico.cli import (
    janitor,
    maintenance,
    merge,
    replay,
    schema,
    serve,
    share,
    study,
    transfer,
    users,
)
from haico.config import Settings, get_settings
from haico.process import log_redaction

# What each command needs of the database before it runs: nothing (it checks or
# restores the files as they are; `serve` migrates unless told not to), the schema
# at head, or the schema and, with auth off, the local user it acts as.
Before = Literal["nothing", "schema", "schema and local user"]


@dataclass(frozen=True)
class Command:
    commands: tuple[str, ...]
    add_parsers: Callable[[argparse._SubParsersAction[argparse.ArgumentParser]], None]
    run: Callable[[Settings, argparse.Namespace], int]
    before: Before


# In the order `haico --help` lists them (the AHP client comes after `migrate`).
COMMANDS_FIRST = (
    Command(serve.COMMANDS, serve.add_parsers, serve.run, "nothing"),
    Command(schema.COMMANDS, schema.add_parsers, schema.run, "nothing"),
)
COMMANDS_AFTER_AHP = (
    Command(janitor.COMMANDS, janitor.add_parsers, janitor.run, "schema"),
    Command(users.COMMANDS, users.add_parsers, users.run, "schema"),
    Command(transfer.COMMANDS, transfer.add_parsers, transfer.run, "schema"),
    Command(maintenance.COMMANDS, maintenance.add_parsers, maintenance.run, "nothing"),
    Command(merge.COMMANDS, merge.add_parsers, merge.run, "schema"),
    Command(replay.COMMANDS, replay.add_parsers, replay.run, "schema and local user"),
    Command(share.COMMANDS, share.add_parsers, share.run, "schema"),
    Command(study.COMMANDS, study.add_parsers, study.run, "schema"),
)


def build_parser() -> argparse.ArgumentParser:
    from haico.ahp import cli_client

    parser = argparse.ArgumentParser(prog="haico", description="HAICO co-construction studio")
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS_FIRST:
        command.add_parsers(sub)
    cli_client.add_parser(sub)
    for command in COMMANDS_AFTER_AHP:
        command.add_parsers(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    refused = serve.reexec_allocator(argv)
    if refused is not None:
        return refused
    args = build_parser().parse_args(argv)
    if args.command == "ahp":
        from haico.ahp import cli_client

        return cli_client.main(args)
    logging.basicConfig(level=logging.INFO, format=log_redaction.FORMAT)
    log_redaction.protect_root()
    settings = get_settings()
    for command in (*COMMANDS_FIRST, *COMMANDS_AFTER_AHP):
        if args.command in command.commands:
            if command.before != "nothing":
                schema.migrate(settings, local_user=command.before == "schema and local user")
            return command.run(settings, args)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
