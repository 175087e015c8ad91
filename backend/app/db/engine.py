"""The SQL engine and transaction helper shared by every service."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


class Database:
    """Owns the async engine; services open short transactions through it."""

    def __init__(self, url: str, *, echo: bool = False) -> None:
        self.url = url
        self.is_sqlite = url.startswith("sqlite")
        kwargs: dict[str, Any] = {"echo": echo}
        if not self.is_sqlite:
            kwargs.update(pool_size=10, max_overflow=20, pool_pre_ping=True)
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        if self.is_sqlite:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
            # pysqlite's own BEGIN handling is off so that BEGIN IMMEDIATE can take the
            # write lock up front (the SQLite form of a row lock).
            event.listen(self.engine.sync_engine, "connect", _disable_pysqlite_begin)
            event.listen(self.engine.sync_engine, "begin", _sqlite_begin)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        # Called after a transaction that appended to the action log commits.
        self.commit_listeners: list[Callable[[], None]] = []

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction: committed on success, rolled back on error."""
        async with self.sessions() as session:
            async with session.begin():
                yield session
            if session.info.pop("haico_events", False):
                for listener in self.commit_listeners:
                    listener()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncSession]:
        async with self.sessions() as session:
            yield session

    async def dispose(self) -> None:
        await self.engine.dispose()


def _disable_pysqlite_begin(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None


def _sqlite_begin(conn: Any) -> None:
    # Every SQLite transaction takes the write lock at BEGIN: writers queue on the busy
    # timeout instead of failing with "database is locked" when upgrading a read lock.
    conn.exec_driver_sql("BEGIN IMMEDIATE")
