"""Read sessions: plain reads need no transaction on PostgreSQL, and a read that holds
appends off (a chat snapshot and the log position it stands at) keeps them off until
it ends, on both databases."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator

import pytest

from haico.config import Settings
from haico.db.engine import Database
from haico.events import log as action_log

pytestmark = pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    database = Database(settings.sql_url)
    yield database
    await database.dispose()


async def _append(db: Database, root: str) -> None:
    async with db.transaction() as s:
        await action_log.append_chat(s, root, {"type": "test", "name": "meanwhile"})


async def test_a_held_read_sees_one_moment_of_the_log(db: Database) -> None:
    root = f"th_{uuid.uuid4().hex}"
    await _append(db, root)
    async with db.read(held=True) as s:
        await action_log.hold_appends(s)
        _, first = await action_log.bounds(s)
        # PostgreSQL: the append waits for the read's lock; SQLite: it commits beside
        # the read, which keeps its snapshot.
        append = asyncio.ensure_future(_append(db, root))
        await asyncio.wait({append}, timeout=0.5)
        _, second = await action_log.bounds(s)
        assert second == first
        if db.dialect.is_postgres:
            assert not append.done(), "an append went in while appends were held off"
    await asyncio.wait_for(append, 10)
    async with db.read() as s:
        assert (await action_log.bounds(s))[1] == first + 1


async def test_holding_appends_in_a_read_without_a_transaction_is_refused(db: Database) -> None:
    async with db.read() as s:
        if db.dialect.is_postgres:
            # Autocommit: the lock would be let go as soon as it was taken.
            with pytest.raises(RuntimeError, match="held=True"):
                await action_log.hold_appends(s)
        else:
            await action_log.hold_appends(s)  # SQLite's read transaction holds its snapshot
