"""Which threads the transcript store holds checkpoints for (the consistency check)."""

from __future__ import annotations

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver
from psycopg_pool import AsyncConnectionPool

from haico.agent.checkpointer import CheckpointStore

# Every thread with a checkpoint or a pending write (LangGraph's own tables).
PG_THREADS_SQL = (
    "SELECT thread_id FROM checkpoints UNION SELECT thread_id FROM checkpoint_writes "
    "UNION SELECT thread_id FROM checkpoint_blobs"
)
SQLITE_THREADS_SQL = "SELECT thread_id FROM checkpoints UNION SELECT thread_id FROM writes"


async def thread_ids(store: CheckpointStore) -> set[str]:
    """The thread ids of every checkpoint in the store (all savers share one store)."""
    saver = store.savers[0]
    if isinstance(saver, AsyncPostgresSaver):
        source = saver.conn
        if isinstance(source, AsyncConnectionPool):
            async with source.connection() as conn:
                rows = await (await conn.execute(PG_THREADS_SQL)).fetchall()
        else:
            rows = await (await source.execute(PG_THREADS_SQL)).fetchall()
        return {str(row["thread_id"]) for row in rows}
    if isinstance(saver, AsyncSqliteSaver):
        async with saver.lock, saver.conn.execute(SQLITE_THREADS_SQL) as cur:
            return {str(row[0]) for row in await cur.fetchall()}
    raise TypeError(f"cannot list the threads of a {type(saver).__name__}")
