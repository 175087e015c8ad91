"""The SQL engine and transaction helper shared by every service."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from typing import Any

import orjson
from sqlalchemy import event, text
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.ext.asyncio import (
    AsyncEngine,
    AsyncSession,
    async_sessionmaker,
    create_async_engine,
)
from sqlalchemy.orm.exc import StaleDataError
from sqlalchemy.pool import QueuePool
from sqlalchemy.util import greenlet_spawn

from haico.db.base import json_text
from haico.db.dialect import Dialect, dialect_for_url
from haico.db.driver import Driver
from haico.db.faults import Seam
from haico.db.memo import Memo
from haico.domain import Limits, LoggedAction
from haico.errors import Conflict

# A test seam: called with the name of a step of a multi-step write (`haico.db.faults`);
# raising from it injects a failure there. Production code runs with `no_faults`.
FaultPoint = Callable[[Seam], Awaitable[None]]


# The execution option that marks a `Database.read()` connection.
READ_ONLY = "haico_read_only"
# In a session's `info`: its statements are each their own transaction (PostgreSQL).
AUTOCOMMIT = "haico_autocommit"

# `session.info` key: the action-log entries a transaction appended, in `seq` order
# (`haico.events.log` adds them; the listeners get them once the transaction commits).
APPENDED = "haico_appended"
# `session.info` keys: the Database's known bodies, and the bodies a transaction stores.
BODIES = "haico_bodies"
BODIES_WRITTEN = "haico_bodies_written"
# How many body hashes a Database remembers (about 100 bytes each).
BODY_HASHES_KEPT = 50_000

# Told, after a transaction that appended to the action log committed, what it appended.
CommitListener = Callable[[list[LoggedAction]], None]


async def no_faults(_: str) -> None:
    return None


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA busy_timeout=10000")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.close()


# PostgreSQL connections a process keeps open, and how many more it may open for a
# burst (closed again as soon as they are returned). A soak run with 10 kept and 20
# for bursts held about 20 at once and so opened and closed 2.5 connections a second,
# each with its own start-up queries and statement cache.
POOL_SIZE = 20
POOL_OVERFLOW = 10


# A pooled PostgreSQL connection idle for longer than this is pinged before it is
# handed out (BEGIN, an empty query, ROLLBACK: three round trips), and replaced if the
# ping fails. One returned to the pool moments ago was working then and is used as is:
# pinging every checkout, as `pool_pre_ping` does, cost a busy process three round
# trips per transaction (about 0.7 ms on a checkout of 8 ms). If the server went away
# within that second, the first statement fails, SQLAlchemy recognises the disconnect
# and drops every pooled connection, and that one request is answered 503.
# (The checkpointer's pool pings every checkout: see `agent/checkpointer.py`.)
PING_AFTER_IDLE_SECONDS = 1.0
# The app's statements are prepared once per connection (asyncpg) and differ only in
# their parameters, which never change a good plan: lookups by key, and the turn's
# writes. PostgreSQL would plan each execution anew (a custom plan, at every bind)
# before settling on the generic one, and keeps doing so for the composite writes of
# a turn, where planning took longer than running. Generic plans from the start.
PLAN_CACHE_MODE = "force_generic_plan"
_CHECKED_IN = "haico_checked_in"


def _note_checkin(_dbapi_conn: Any, record: Any) -> None:
    record.info[_CHECKED_IN] = time.monotonic()


def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    returned = record.info.get(_CHECKED_IN)
    if returned is not None and time.monotonic() - returned < PING_AFTER_IDLE_SECONDS:
        return
    try:
        dbapi_conn.ping()
    except Exception as exc:
        # The pool discards this connection and hands out another (or a new one).
        raise DisconnectionError("the pooled connection did not answer a ping") from exc


class Database:
    """Owns the async engine; services open short transactions through it.

    `faults` is the fault-injection seam (a dependency given at construction; tests
    pass their own). Every session carries the dialect and the seam in its `info`.
    """

    def __init__(
        self,
        url: str,
        *,
        echo: bool = False,
        faults: FaultPoint = no_faults,
        limits: Limits | None = None,
        pool: tuple[int, int] = (POOL_SIZE, POOL_OVERFLOW),
    ) -> None:
        self.url = url
        self.dialect: Dialect = dialect_for_url(url)
        self.faults = faults
        self.limits = limits or Limits()
        # SQLite: one writer at a time in this process (see `transaction`).
        self._writers: asyncio.Lock | None = None if self.dialect.is_postgres else asyncio.Lock()
        kwargs: dict[str, Any] = {
            "echo": echo,
            "json_serializer": json_text,
            "json_deserializer": orjson.loads,
            # A statement's error never quotes its parameters (a document, a message):
            # errors are logged, and what a request wrote must not reach a log line.
            "hide_parameters": True,
        }
        if self.dialect.is_postgres:
            kwargs.update(
                pool_size=pool[0],
                max_overflow=pool[1],
                connect_args={"server_settings": {"plan_cache_mode": PLAN_CACHE_MODE}},
            )
        self.engine: AsyncEngine = create_async_engine(url, **kwargs)
        # The same pool, its connections in autocommit mode (see `one_statement`).
        self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self._snapshot = self.engine.execution_options(
            isolation_level="REPEATABLE READ", postgresql_readonly=True
        )
        if self.dialect.is_postgres:
            event.listen(self.engine.sync_engine.pool, "checkin", _note_checkin)
            event.listen(self.engine.sync_engine.pool, "checkout", _ping_if_idle)
        if not self.dialect.is_postgres:
            event.listen(self.engine.sync_engine, "connect", _sqlite_pragmas)
            # pysqlite's own BEGIN handling is off so that BEGIN IMMEDIATE can take the
            # write lock up front (the SQLite form of a row lock).
            event.listen(self.engine.sync_engine, "connect", _disable_pysqlite_begin)
            event.listen(self.engine.sync_engine, "begin", _sqlite_begin)
        self.sessions = async_sessionmaker(self.engine, expire_on_commit=False)
        # The hashes of document bodies committed through this Database: a body is
        # never deleted, so a write of the same text again can be left out
        # (`repositories.workspace.body_write`). Per Database, not per process: two
        # databases (tests) do not share what they hold.
        self.bodies: Memo[bool] = Memo(BODY_HASHES_KEPT)
        # Called after a transaction that appended to the action log commits.
        self.commit_listeners: list[CommitListener] = []
        # Called with the SQL of each statement run on the driver (`driver`), which
        # SQLAlchemy's own events (`before_cursor_execute`) do not see: for
        # instrumentation and tests.
        self.statement_listeners: list[Callable[[str], None]] = []

    @property
    def is_sqlite(self) -> bool:
        return not self.dialect.is_postgres

    def _session(self, bind: AsyncEngine | None = None) -> AsyncSession:
        session = self.sessions() if bind is None else self.sessions(bind=bind)
        session.info[AUTOCOMMIT] = bind is self._autocommit and self.dialect.is_postgres
        session.info["dialect"] = self.dialect
        session.info["faults"] = self.faults
        session.info["listeners"] = self.statement_listeners
        session.info["limits"] = self.limits
        session.info[BODIES] = self.bodies
        return session

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[AsyncSession]:
        """A session inside one transaction: committed on success, rolled back on error.

        On SQLite, writers of this process queue on an asyncio lock before they ask
        for the database's write lock: waiting in SQLite's busy handler (sleep and
        retry) would waste the time the lock is free, and with many conversations at
        once the store would get slower than with one. Other processes (the CLI) still
        meet the busy timeout."""
        if self._writers is None:
            async with self._one_transaction() as session:
                yield session
            return
        async with self._writers, self._one_transaction() as session:
            yield session

    @asynccontextmanager
    async def _one_transaction(self) -> AsyncIterator[AsyncSession]:
        async with self._session() as session:
            try:
                async with session.begin():
                    yield session
            except StaleDataError as exc:
                # An UPDATE matched no row: another transaction deleted it (or moved a
                # versioned row) after this one read it. Nothing was committed here.
                raise Conflict(
                    "what this request changes was deleted or changed meanwhile by "
                    "another request; reload and retry"
                ) from exc
            self._committed(session)

    def _committed(self, session: AsyncSession) -> None:
        """Tell the commit listeners what `session` appended to the action log, and
        keep the hashes of the bodies it stored."""
        self.stored_bodies(session.info.pop(BODIES_WRITTEN, ()))
        self._tell(session.info.pop(APPENDED, None))

    def stored_bodies(self, digests: Iterable[str]) -> None:
        """Bodies whose write has committed (`bodies`)."""
        for digest in digests:
            self.bodies.put(digest, True, 1)

    def _tell(self, appended: list[LoggedAction] | None) -> None:
        if appended:
            for listener in self.commit_listeners:
                listener(appended)

    def has_spare_connection(self) -> bool:
        """PostgreSQL: the pool holds an idle connection (a read can run beside a
        transaction's own without waiting for one, or making one)."""
        pool = self.engine.sync_engine.pool
        return self.dialect.is_postgres and isinstance(pool, QueuePool) and pool.checkedin() > 0

    @asynccontextmanager
    async def driver(self) -> AsyncIterator[Driver]:
        """PostgreSQL: a pooled connection in autocommit mode whose statements run on
        the driver directly (`haico.db.driver`), for a change made by one statement on a
        hot path. What it appended to the action log is committed with its statement:
        the listeners hear of it once the connection is back in the pool, as with
        `one_statement`. A connection whose statement failed other than with an error
        the server reported (lost, cancelled mid-statement) is dropped from the pool."""
        if not self.dialect.is_postgres:
            raise RuntimeError("Database.driver is for PostgreSQL")
        # Straight from the pool: no Connection object, no isolation level to set and
        # reset (asyncpg itself runs each statement as its own transaction).
        fairy = await self.engine.raw_connection()
        found = Driver(
            fairy.driver_connection, self.engine.dialect, self.faults, self.statement_listeners
        )
        try:
            yield found
        finally:
            # Back in the pool before the listeners hear (as `one_statement`); whatever
            # was appended is committed, even if the caller failed after it (or the
            # return to the pool does).
            try:
                await greenlet_spawn(fairy.invalidate if found.broken else fairy.close)
            finally:
                self._tell(found.appended)

    @asynccontextmanager
    async def one_statement(self) -> AsyncIterator[AsyncSession]:
        """A session for a change made by a single statement (reads before it are fine).

        On PostgreSQL the session's connection is in autocommit mode: the statement is
        its own transaction, atomic as any, and costs one round trip where
        BEGIN ... COMMIT costs three. A caller that issues two writes here gets two
        transactions: it must not. On SQLite this is `transaction()`, where the same
        code runs as reads and sequential writes under the write lock."""
        if not self.dialect.is_postgres:
            async with self.transaction() as session:
                yield session
            return
        session = self._session(self._autocommit)
        try:
            async with session:
                yield session
        finally:
            # Whatever was appended is committed, even if the caller failed after it;
            # the listeners hear of it once the connection is back in the pool.
            self._committed(session)

    @asynccontextmanager
    async def read(
        self, *, held: bool = False, snapshot: bool = False
    ) -> AsyncIterator[AsyncSession]:
        """A session for reads only.

        On PostgreSQL its connection is in autocommit mode: at READ COMMITTED every
        statement sees the commits made before it began, inside a transaction or not,
        so BEGIN and ROLLBACK around the reads would add two round trips and change
        nothing. `held` asks for a transaction anyway, for a read that takes a lock
        to be kept until it ends (`action_log.hold_appends`). On SQLite the session's
        transaction is a plain (deferred) BEGIN, so a reader never takes or waits for
        the write lock (WAL readers see the last commit while a writer works), and its
        reads share one snapshot.

        `snapshot` asks for that on PostgreSQL too: a read-only REPEATABLE READ
        transaction, for an answer assembled from several statements that must all
        describe one moment (the graph: its nodes and the head among them)."""
        if self.dialect.is_postgres:
            bind = self._snapshot if snapshot else None if held else self._autocommit
            async with self._session(bind) as session:
                yield session
            return
        async with self._session() as session:
            await session.connection(execution_options={READ_ONLY: True})
            yield session

    async def ping(self) -> bool:
        """Whether the database answers a trivial query."""
        try:
            async with self.engine.connect() as conn:
                await conn.execute(text("SELECT 1"))
        except Exception:
            return False
        return True

    async def dispose(self) -> None:
        await self.engine.dispose()


def bodies_of(session: AsyncSession) -> Memo[bool] | None:
    """The hashes of the bodies committed through the Database of `session`."""
    bodies: Memo[bool] | None = session.info.get(BODIES)
    return bodies


def bodies_written(session: AsyncSession, digests: Iterable[str]) -> None:
    """Bodies `session`'s transaction stores: known as stored once it commits."""
    session.info.setdefault(BODIES_WRITTEN, []).extend(digests)


def limits_of(session: AsyncSession) -> Limits:
    """The limits of the Database that opened `session`."""
    limits: Limits = session.info.get("limits") or Limits()
    return limits


async def fault(session: AsyncSession, step: Seam) -> None:
    """Pass the named step of a multi-step write through the fault seam."""
    point: FaultPoint = session.info.get("faults", no_faults)
    await point(step)


def _disable_pysqlite_begin(dbapi_conn: Any, _record: Any) -> None:
    dbapi_conn.isolation_level = None


def _sqlite_begin(conn: Any) -> None:
    # A writing transaction takes the write lock at BEGIN: writers queue on the busy
    # timeout instead of failing with "database is locked" when upgrading a read lock.
    # A `Database.read()` session begins deferred and never asks for it.
    if conn.get_execution_options().get(READ_ONLY):
        conn.exec_driver_sql("BEGIN")
    else:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
