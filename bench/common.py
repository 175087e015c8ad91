"""Shared pieces of the service benchmarks: a throwaway database, an app-like context
(settings, SQL database, checkpointer, agent runtime with the offline model, turn
manager), a turn driver, and the table / JSON output of every benchmark."""

from __future__ import annotations

import json
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
from sqlalchemy.ext.asyncio import create_async_engine

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db import models  # noqa: F401  (registers every table on Base.metadata)
from haico.db.base import Base
from haico.db.engine import Database
from haico.events.bus import EventBus
from haico.main import quiet_collector
from haico.services.access import users
from haico.services.access.principal import Principal
from haico.services.families import conversations
from haico.services.turns.agent_port import AgentWorkspace
from haico.services.turns.manager import TurnManager

ADMIN_URL = os.environ.get(
    "HAICO_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)


async def admin(sql: str) -> None:
    conn = await asyncpg.connect(ADMIN_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def _create_schema(sql_url: str) -> None:
    engine = create_async_engine(sql_url)
    try:
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
    finally:
        await engine.dispose()


@asynccontextmanager
async def temp_settings(backend: str = "postgres") -> AsyncIterator[Settings]:
    """Settings on a fresh, empty store: a `bench_<hex>` Postgres database (dropped at the
    end) or SQLite files in a temporary directory. The app's tables exist; the
    checkpointer's are created by `Harness.open` (as the app's lifespan does)."""
    with tempfile.TemporaryDirectory(prefix="haico-bench-") as tmp:
        data_dir = Path(tmp) / "data"
        data_dir.mkdir()
        if backend == "sqlite":
            settings = Settings(database_url=None, data_dir=data_dir, secret_key="bench")
            await _create_schema(settings.sql_url)
            yield settings
            return
        name = f"bench_{uuid.uuid4().hex[:16]}"
        await admin(f'CREATE DATABASE "{name}"')
        try:
            url = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            settings = Settings(database_url=url, data_dir=data_dir, secret_key="bench")
            await _create_schema(settings.sql_url)
            yield settings
        finally:
            await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@dataclass
class Harness:
    """What the app's lifespan wires up (the garbage collector's serving setup
    included), minus HTTP and the janitor."""

    settings: Settings
    db: Database
    runtime: AgentRuntime
    turns: TurnManager
    principal: Principal

    @property
    def user_id(self) -> int:
        return self.principal.id

    @classmethod
    @asynccontextmanager
    async def open(cls, settings: Settings) -> AsyncIterator[Harness]:
        db = Database(settings.sql_url)
        runtime = AgentRuntime(settings, AgentWorkspace(db))
        turns: TurnManager | None = None
        bus = EventBus(settings, db)
        try:
            user = await users.ensure_local(db, name="bench")
            await setup_checkpointer(settings)
            await runtime.start()
            await bus.start()
            turns = TurnManager(settings, db, runtime, bus)
            await turns.start()
            quiet_collector(settings)
            yield cls(settings, db, runtime, turns, user)
        finally:
            if turns is not None:
                await turns.close()
            await bus.close()
            await runtime.close()
            await db.dispose()

    async def new_conversation(self, title: str = "bench") -> str:
        conv = await conversations.create(self.db, principal=self.principal, title=title)
        return conv.thread_id

    async def send(self, thread_id: str, content: str) -> tuple[str, float]:
        """One turn through the turn service: start_turn, then its events to the end.

        Returns the reply and the milliseconds from start_turn to turn_completed.
        """
        start = time.perf_counter()
        turn = await self.turns.start_turn(
            principal=self.principal, thread_id=thread_id, content=content
        )
        reply: str | None = None
        async for event in turn.events():
            if event.name == "turn_completed":
                reply = str(event.data.get("reply", ""))
            elif event.name == "error":
                raise RuntimeError(f"turn {turn.node_id} failed: {event.data}")
        elapsed = (time.perf_counter() - start) * 1000
        if reply is None:
            raise RuntimeError(f"turn {turn.node_id} ended without turn_completed")
        return reply, elapsed


def random_text(chars: int, prefix: str = "") -> str:
    """`chars` characters that do not compress away (TOAST would hide a repetitive payload);
    one line, no `;`, so the offline model reads it as plain text."""
    words: list[str] = [prefix] if prefix else []
    size = len(prefix)
    while size < chars:
        word = uuid.uuid4().hex
        words.append(word)
        size += len(word) + 1
    return " ".join(words)[:chars]


def median(values: Sequence[float]) -> float:
    return statistics.median(values) if values else 0.0


def percentile(values: Sequence[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), round(p / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def print_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> None:
    """Rows as a right-aligned text table; `columns` are (title, key)."""
    cells = [[_fmt(r.get(key)) for _, key in columns] for r in rows]
    widths = [
        max(len(title), *(len(c[i]) for c in cells)) if cells else len(title)
        for i, (title, _) in enumerate(columns)
    ]
    header = "  ".join(f"{title:>{w}}" for (title, _), w in zip(columns, widths, strict=True))
    print(header)
    print("-" * len(header))
    for row in cells:
        print("  ".join(f"{c:>{w}}" for c, w in zip(row, widths, strict=True)))


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.2f}" if abs(value) < 1000 else f"{value:,.0f}"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    return str(value)


def report(name: str, checks: dict[str, bool], **fields: Any) -> int:
    """Print the checks and the one JSON line; the exit status (1 if a check failed)."""
    ok = all(checks.values())
    for check, passed in checks.items():
        print(f"  {'PASS' if passed else 'FAIL'}  {check}")
    print(json.dumps({"bench": name, **fields, "checks": checks, "ok": ok}, default=str))
    return 0 if ok else 1
