"""Statements run on the driver itself (PostgreSQL, asyncpg), without a session.

A turn's opening and closing are each one statement built with SQLAlchemy Core. Run
through a session, SQLAlchemy's own work per statement (the session and its
transaction object, the execution context, the parameter and result objects) took
about as long as the database did. Here the statement is compiled by SQLAlchemy once
per statement object, and each run binds its parameters in order and hands them to
asyncpg, on a connection checked out of the same pool as every session's.

What this does not do, and so what a statement run here must not need: Python-side
column defaults (give every column a value; a `Stamp` column left out is stamped as it
is bound, as on every other path), expanding IN parameters, escaped parameter names.
`prepared` refuses such a statement when it is first compiled.
Errors the server reports come out as SQLAlchemy's (`IntegrityError`, `DBAPIError`),
so callers catch the same exceptions either way; a lost connection is raised as the
driver raised it (`outage.is_store_outage` knows those) and the connection is dropped
from the pool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache, lru_cache
from typing import Any, TypeVar, cast

import asyncpg
from sqlalchemy import ColumnElement
from sqlalchemy import exc as sa_exc
from sqlalchemy import inspect as sa_inspect
from sqlalchemy.engine import Dialect as SADialect
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import Mapper
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler

from haico.db.base import Stamp
from haico.db.faults import Seam
from haico.domain import LoggedAction

FaultPoint = Callable[[Seam], Any]
T = TypeVar("T")


@dataclass(frozen=True)
class Prepared:
    """A statement compiled for asyncpg: its SQL, its parameters' names in order, and
    the conversions SQLAlchemy applies to some of their values."""

    sql: str
    names: tuple[str, ...]
    processors: Mapping[str, Callable[[Any], Any]]
    compiled: SQLCompiler

    def arguments(self, params: Mapping[str, Any]) -> list[Any]:
        # construct_params adds the values a statement carries itself (a literal in
        # `.values(...)` is a parameter of the compiled statement).
        values = self.compiled.construct_params(dict(params))
        assert values is not None
        return [
            self.processors[n](values[n]) if n in self.processors else values[n] for n in self.names
        ]


@lru_cache(maxsize=128)
def prepared(statement: ClauseElement, dialect: SADialect) -> Prepared:
    """`statement` compiled once (statements meant to run often are built once, so the
    cache keys on the object)."""
    compiled = statement.compile(dialect=dialect)
    assert isinstance(compiled, SQLCompiler)
    processors = compiled._bind_processors
    unsupported = [
        name
        for name, present in (
            # A `Stamp` left unset is stamped as it is bound (its type's processor).
            (
                "Python-side insert defaults",
                [c for c in compiled.insert_prefetch if not isinstance(c.type, Stamp)],
            ),
            ("Python-side update defaults", compiled.update_prefetch),
            ("escaped parameter names", compiled.escaped_bind_names),
            ("expanding parameters", [b for b in compiled.binds.values() if b.expanding]),
            ("tuple parameters", [f for f in processors.values() if not callable(f)]),
        )
        if present
    ]
    if unsupported or not compiled.positional:
        raise ValueError(f"cannot run on the driver directly: {', '.join(unsupported)}")
    return Prepared(
        sql=compiled.string,
        names=tuple(compiled.positiontup or ()),
        processors={n: f for n, f in processors.items() if callable(f)},
        compiled=compiled,
    )


# SQLSTATEs after which the server closes the connection: a connection exception
# (class 08) and the server shutting down or terminating this backend.
_FATAL_SQLSTATES = ("08", "57P01", "57P02", "57P03")


def _ends_connection(exc: asyncpg.exceptions.PostgresError) -> bool:
    return str(getattr(exc, "sqlstate", "") or "").startswith(_FATAL_SQLSTATES)


@dataclass
class Driver:
    """One pooled connection in autocommit mode: every statement is its own
    transaction. `appended` collects the action-log entries its statements wrote, for
    the commit listeners (`Database.driver`)."""

    conn: asyncpg.Connection
    dialect: SADialect
    faults: FaultPoint
    # Told the SQL of each statement before it runs (`Database.statement_listeners`).
    listeners: list[Callable[[str], None]] = field(default_factory=list)
    appended: list[LoggedAction] = field(default_factory=list)
    # A statement failed without the server's answer: the connection is not reused.
    broken: bool = False

    async def fetch(self, statement: ClauseElement, params: Mapping[str, Any]) -> list[Any]:
        """Run `statement` with `params`; its rows (asyncpg records)."""
        p = prepared(statement, self.dialect)
        args = p.arguments(params)
        for listener in self.listeners:
            listener(p.sql)
        try:
            return list(await self.conn.fetch(p.sql, *args))
        except asyncpg.exceptions.IntegrityConstraintViolationError as exc:
            raise sa_exc.IntegrityError(p.sql, args, exc) from exc
        except asyncpg.exceptions.PostgresError as exc:
            self.broken = self.conn.is_closed() or _ends_connection(exc)
            raise sa_exc.DBAPIError(p.sql, args, exc, connection_invalidated=self.broken) from exc
        except BaseException:
            self.broken = True
            raise

    async def fault(self, step: Seam) -> None:
        """Pass the named step of a multi-step write through the fault seam."""
        await self.faults(step)


async def of_session(s: AsyncSession, *, flush: bool = False) -> Driver | None:
    """PostgreSQL: a driver over the session's own connection, inside the transaction
    the session holds there, for a statement on a hot path that SQLAlchemy would spend
    longer on than the database. None on SQLite, in an autocommit session, before the
    session's first statement (its transaction has not begun on the server yet), or
    while the session holds unwritten changes: the caller goes through the session
    then. `flush`: write those changes first instead, as the session's autoflush does
    before a read of mapped classes. A failed statement fails the session's
    transaction as it would through the session."""
    # (`dialect.dialect_of`, which imports this module.)
    if not getattr(s.info.get("dialect"), "is_postgres", False) or not s.in_transaction():
        return None
    if flush:
        await s.flush()
    elif s.new or s.dirty or s.deleted:
        return None
    conn = await s.connection()
    raw = await conn.get_raw_connection()
    # SQLAlchemy's asyncpg adapter begins its transaction with the first statement.
    if getattr(raw.dbapi_connection, "_transaction", None) is None:
        return None
    return Driver(
        raw.driver_connection, conn.dialect, s.info["faults"], s.info.get("listeners", [])
    )


@lru_cache(maxsize=256)
def runs_on_driver(statement: ClauseElement, dialect: SADialect) -> bool:
    """Whether `prepared` takes `statement` (kept per statement object)."""
    try:
        prepared(statement, dialect)
    except ValueError:
        return False
    return True


async def fetch_in_session(
    s: AsyncSession, statement: ClauseElement, params: Mapping[str, Any]
) -> list[Any] | None:
    """`statement`'s rows fetched on the session's connection (`of_session`), or None
    when it must go through the session."""
    driver = await of_session(s)
    if driver is None or not runs_on_driver(statement, driver.dialect):
        return None
    return await driver.fetch(statement, params)


# Rows as entities. A driver read names each column it selects of a model with the
# model's prefix (`labelled`); `entity` builds the (transient) instance back from a
# record, as the session would have loaded it.


@cache
def _attributes(model: type) -> tuple[tuple[str, str], ...]:
    """(attribute, column name) of each column `model` maps."""
    mapper: Mapper[Any] = sa_inspect(model)
    return tuple((p.key, p.columns[0].name) for p in mapper.column_attrs)


def labelled(model: type, prefix: str) -> list[ColumnElement[Any]]:
    """The columns of `model`'s table, each labelled `prefix` + its name."""
    mapper: Mapper[Any] = sa_inspect(model)
    table = mapper.local_table
    return [table.c[name].label(prefix + name) for _, name in _attributes(model)]


def entity(model: type[T], record: Mapping[str, Any], prefix: str) -> T | None:
    """The instance of `model` in `record`'s columns labelled with `prefix`; None when
    they are all NULL (the missing side of an outer join)."""
    values = {key: record[prefix + name] for key, name in _attributes(cast(type, model))}
    if all(v is None for v in values.values()):
        return None
    return model(**values)
