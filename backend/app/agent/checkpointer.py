"""The transcript store: LangGraph checkpointers on Postgres or SQLite.

`AsyncPostgresSaver` serialises every call through one `asyncio.Lock` per instance,
so a single saver would make the turns of unrelated conversations queue behind each
other's checkpoint reads and writes. The Postgres store therefore opens several
savers on one shared connection pool and gives each thread a fixed saver, chosen by a
stable hash of its id: calls for one thread stay ordered, other threads mostly use
other savers. SQLite has one writer anyway, so it gets one saver on one connection.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import aiosqlite
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg import AsyncConnection
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool

from app.config import Settings

POSTGRES_SHARDS = 8
SQLITE_BUSY_TIMEOUT_MS = 10_000

_PG_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


# Each checkpoint's `messages` blob (its turn record), without the rest of the
# checkpoint: what `alist` would load, minus a thread hop and the pending writes per row.
_RECORDS_SQL = """
SELECT bl.type, bl.blob
FROM checkpoints c
JOIN checkpoint_blobs bl
  ON bl.thread_id = c.thread_id AND bl.checkpoint_ns = c.checkpoint_ns
  AND bl.channel = 'messages' AND bl.version = c.checkpoint -> 'channel_versions' ->> 'messages'
WHERE c.thread_id = %s AND c.checkpoint_ns = ''
ORDER BY c.checkpoint_id DESC
"""


async def turn_records(
    saver: BaseCheckpointSaver[Any], thread_id: str, *, limit: int | None = None
) -> list[list[Any]]:
    """The `messages` value of each of the thread's checkpoints (its turn records, see
    `state.py`), oldest first; only the newest `limit` when given."""
    if isinstance(saver, AsyncPostgresSaver):
        query = _RECORDS_SQL if limit is None else _RECORDS_SQL + " LIMIT %s"
        params: list[Any] = [thread_id] if limit is None else [thread_id, limit]
        source = saver.conn
        if isinstance(source, AsyncConnectionPool):
            async with source.connection() as conn:
                rows = await (await conn.execute(query, params, binary=True)).fetchall()
        else:
            rows = await (await source.execute(query, params, binary=True)).fetchall()
        records = [
            list(saver.serde.loads_typed((row["type"], row["blob"])) or [])
            for row in rows
            if row["type"] != "empty"
        ]
    else:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        records = [
            list(t.checkpoint["channel_values"].get("messages") or [])
            async for t in saver.alist(config, limit=limit)
        ]
    records.reverse()
    return records


def shard_of(thread_id: str, shards: int) -> int:
    """A stable shard for `thread_id` (the same in every process, unlike `hash`)."""
    return zlib.crc32(thread_id.encode()) % shards


async def _open_sqlite(path: str) -> aiosqlite.Connection:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = await aiosqlite.connect(path)
    await conn.execute("PRAGMA journal_mode=WAL")
    await conn.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
    await conn.execute("PRAGMA synchronous=NORMAL")
    return conn


async def setup_checkpointer(settings: Settings) -> None:
    """Create (or migrate) the checkpointer's tables."""
    if settings.is_postgres:
        conn = await AsyncConnection[DictRow].connect(settings.checkpoint_url, **_PG_KWARGS)
        async with conn:
            await AsyncPostgresSaver(conn).setup()
        return
    sqlite = await _open_sqlite(settings.checkpoint_url)
    try:
        await AsyncSqliteSaver(sqlite).setup()
    finally:
        await sqlite.close()


class CheckpointStore:
    """The open savers of one process; `for_thread` picks a thread's saver."""

    def __init__(
        self,
        savers: Sequence[BaseCheckpointSaver[Any]],
        *,
        pool: AsyncConnectionPool[AsyncConnection[DictRow]] | None = None,
        sqlite: aiosqlite.Connection | None = None,
    ) -> None:
        self.savers = list(savers)
        self._pool = pool
        self._sqlite = sqlite

    def shard(self, thread_id: str) -> int:
        return shard_of(thread_id, len(self.savers))

    def for_thread(self, thread_id: str) -> BaseCheckpointSaver[Any]:
        return self.savers[self.shard(thread_id)]

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
        if self._sqlite is not None:
            await self._sqlite.close()


# How long a checkpoint read or write waits for a pooled connection.
CONNECTION_WAIT_S = 5.0


async def open_checkpointers(
    settings: Settings, *, shards: int = POSTGRES_SHARDS
) -> CheckpointStore:
    """Open the savers `settings` call for (tables must exist: see `setup_checkpointer`)."""
    if settings.is_postgres:
        pool: AsyncConnectionPool[AsyncConnection[DictRow]] = AsyncConnectionPool(
            settings.checkpoint_url,
            min_size=1,
            max_size=shards + 2,
            kwargs=_PG_KWARGS,
            check=AsyncConnectionPool.check_connection,
            # Waiting longer for a connection only delays the 503 when it is unreachable.
            timeout=CONNECTION_WAIT_S,
            open=False,
            name="haico-checkpointer",
        )
        await pool.open()
        return CheckpointStore([AsyncPostgresSaver(pool) for _ in range(shards)], pool=pool)
    conn = await _open_sqlite(settings.checkpoint_url)
    return CheckpointStore([AsyncSqliteSaver(conn)], sqlite=conn)
