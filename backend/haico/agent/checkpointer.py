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
from collections import OrderedDict
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

from haico.config import Settings

POSTGRES_SHARDS = 8
SQLITE_BUSY_TIMEOUT_MS = 10_000

_PG_KWARGS: dict[str, Any] = {"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row}


# A thread's checkpoint ids, newest first; then the `messages` blob (its turn record)
# of some of them, without the rest of the checkpoint: what `alist` would load, minus
# a thread hop and the pending writes per row.
_IDS_SQL = """
SELECT checkpoint_id FROM checkpoints
WHERE thread_id = %s AND checkpoint_ns = ''
ORDER BY checkpoint_id DESC
"""
_RECORDS_SQL = """
SELECT c.checkpoint_id, bl.type, bl.blob
FROM checkpoints c
JOIN checkpoint_blobs bl
  ON bl.thread_id = c.thread_id AND bl.checkpoint_ns = c.checkpoint_ns
  AND bl.channel = 'messages' AND bl.version = c.checkpoint -> 'channel_versions' ->> 'messages'
WHERE c.thread_id = %s AND c.checkpoint_ns = '' AND c.checkpoint_id = ANY(%s)
"""
# SQLite keeps the channel values inside the checkpoint.
_SQLITE_IDS_SQL = (
    "SELECT checkpoint_id FROM checkpoints WHERE thread_id = ? AND checkpoint_ns = '' "
    "ORDER BY checkpoint_id DESC"
)
_SQLITE_RECORDS_SQL = (
    "SELECT checkpoint_id, type, checkpoint FROM checkpoints "
    "WHERE thread_id = ? AND checkpoint_ns = '' AND checkpoint_id IN ({})"
)
_SQLITE_MAX_PARAMS = 500

# Decoded turn records kept per process (see `RecordCache`): at most this many, and
# at most about this many bytes of decoded messages, estimated from the stored blob.
# Measured with tracemalloc on a soak run's records (1,037 of them: 2.2 MB stored,
# 12.5 MB decoded), decoded messages take 5.6 times their serialised size. A soak run
# showed the count alone let a busy process grow by ~3 MB a minute for over an hour;
# the byte bound is what a process's memory settles at. 8 MiB holds about 700 records
# of that soak (12 KB each), i.e. the recent turns of dozens of conversations.
RECORD_CACHE_SIZE = 20_000
RECORD_CACHE_BYTES = 8 * 1024 * 1024
DECODED_PER_STORED_BYTE = 6


class RecordCache:
    """Decoded turn records by (thread, checkpoint id), least recently used out first.

    A checkpoint never changes once written (a new state is a new checkpoint, and a
    cut-back transcript is rewritten under new ids), so a record decoded once stays
    right in every process; a read decodes only the checkpoints it has not seen. The
    messages are shared between readers: nothing may change them in place.
    """

    def __init__(self, size: int = RECORD_CACHE_SIZE, budget: int = RECORD_CACHE_BYTES) -> None:
        self.size = size
        self.budget = budget
        self.used = 0
        self._records: OrderedDict[tuple[str, str], tuple[list[Any], int]] = OrderedDict()

    def get(self, thread_id: str, checkpoint_id: str) -> list[Any] | None:
        entry = self._records.get((thread_id, checkpoint_id))
        if entry is None:
            return None
        self._records.move_to_end((thread_id, checkpoint_id))
        return entry[0]

    def put(self, thread_id: str, checkpoint_id: str, record: list[Any], stored: int = 0) -> None:
        """Keep `record`; `stored` is the size of the blob it was decoded from."""
        key = (thread_id, checkpoint_id)
        old = self._records.pop(key, None)
        if old is not None:
            self.used -= old[1]
        cost = stored * DECODED_PER_STORED_BYTE
        self._records[key] = (record, cost)
        self.used += cost
        while len(self._records) > 1 and (
            len(self._records) > self.size or self.used > self.budget
        ):
            _, (_, freed) = self._records.popitem(last=False)
            self.used -= freed

    def clear(self) -> None:
        self._records.clear()
        self.used = 0


RECORDS = RecordCache()


async def _pg_rows(saver: AsyncPostgresSaver, query: str, params: list[Any]) -> list[Any]:
    source = saver.conn
    if isinstance(source, AsyncConnectionPool):
        async with source.connection() as conn:
            return await (await conn.execute(query, params, binary=True)).fetchall()
    return await (await source.execute(query, params, binary=True)).fetchall()


async def _pg_records(
    saver: AsyncPostgresSaver, thread_id: str, limit: int | None
) -> list[tuple[str, list[Any] | None]]:
    query = _IDS_SQL
    params: list[Any] = [thread_id]
    if limit is not None:
        query, params = query + " LIMIT %s", [thread_id, limit]
    ids = [row["checkpoint_id"] for row in await _pg_rows(saver, query, params)]
    found = {i: RECORDS.get(thread_id, i) for i in ids}
    missing = [i for i, record in found.items() if record is None]
    if missing:
        for row in await _pg_rows(saver, _RECORDS_SQL, [thread_id, missing]):
            record = (
                []
                if row["type"] == "empty"
                else list(saver.serde.loads_typed((row["type"], row["blob"])) or [])
            )
            RECORDS.put(thread_id, row["checkpoint_id"], record, len(row["blob"] or b""))
            found[row["checkpoint_id"]] = record
    return [(i, found[i]) for i in ids]


async def _sqlite_records(
    saver: AsyncSqliteSaver, thread_id: str, limit: int | None
) -> list[tuple[str, list[Any] | None]]:
    query = _SQLITE_IDS_SQL
    params: list[Any] = [thread_id]
    if limit is not None:
        query, params = query + " LIMIT ?", [thread_id, limit]
    async with saver.lock:
        async with saver.conn.execute(query, params) as cur:
            ids = [str(row[0]) for row in await cur.fetchall()]
        found = {i: RECORDS.get(thread_id, i) for i in ids}
        missing = [i for i, record in found.items() if record is None]
        for at in range(0, len(missing), _SQLITE_MAX_PARAMS):
            chunk = missing[at : at + _SQLITE_MAX_PARAMS]
            sql = _SQLITE_RECORDS_SQL.format(", ".join("?" * len(chunk)))
            async with saver.conn.execute(sql, [thread_id, *chunk]) as cur:
                rows = await cur.fetchall()
            for checkpoint_id, kind, blob in rows:
                checkpoint = saver.serde.loads_typed((kind, blob))
                record = list(checkpoint["channel_values"].get("messages") or [])
                RECORDS.put(thread_id, str(checkpoint_id), record, len(blob or b""))
                found[str(checkpoint_id)] = record
    return [(i, found[i]) for i in ids]


async def turn_records(
    saver: BaseCheckpointSaver[Any], thread_id: str, *, limit: int | None = None
) -> list[list[Any]]:
    """The `messages` value of each of the thread's checkpoints (its turn records, see
    `state.py`), oldest first; only the newest `limit` when given. Records are decoded
    once per process (`RecordCache`); the lists returned are the caller's, the messages
    in them are shared."""
    if isinstance(saver, AsyncPostgresSaver):
        pairs = await _pg_records(saver, thread_id, limit)
    elif isinstance(saver, AsyncSqliteSaver):
        pairs = await _sqlite_records(saver, thread_id, limit)
    else:
        config: RunnableConfig = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        pairs = [
            ("", list(t.checkpoint["channel_values"].get("messages") or []))
            async for t in saver.alist(config, limit=limit)
        ]
    # A checkpoint deleted between the two reads has no record: it is left out.
    records = [list(record) for _, record in pairs if record is not None]
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
            # Every checkout pings (an empty query). Pinging only connections idle for
            # a second, as the app's SQL pool does, saved about 1% of a turn's CPU but
            # let the first turn after a database outage fail on a connection cut
            # while idle: nothing else in a turn's path notices the disconnect first
            # (tests/db/test_store_outage.py).
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
