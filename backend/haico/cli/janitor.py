"""`haico janitor`: one sweep of the janitor the server runs on a timer
(`haico.wiring.janitor`): half-built branches and forks, orphaned drafts and
checkpoints, old event-log entries. Prints what it reclaimed as JSON; exit 0.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import TYPE_CHECKING

from haico.config import Settings

if TYPE_CHECKING:
    from haico.wiring.janitor import JanitorReport

COMMANDS = ("janitor",)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser(
        "janitor",
        help="reclaim half-built branches, orphaned drafts, orphan checkpoints and old log "
        "entries once",
    )


def run(settings: Settings, args: argparse.Namespace) -> int:
    report = asyncio.run(_sweep(settings))
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


async def _sweep(settings: Settings) -> JanitorReport:
    from haico.cli.runtime import agent_runtime
    from haico.db.engine import Database
    from haico.wiring.janitor import run_once

    db = Database(settings.sql_url)
    try:
        async with agent_runtime(settings, db) as runtime:
            return await run_once(
                db, runtime, max_age_seconds=settings.pending_max_age_seconds, settings=settings
            )
    finally:
        await db.dispose()
