"""Recognising "the database is unreachable" among the errors the drivers raise.

The app tables go through SQLAlchemy + asyncpg (or aiosqlite), the checkpointer
through psycopg and its pool; a lost or refused connection surfaces from any of them,
often wrapped. The HTTP face answers such an error with 503 instead of a 500.
"""

from __future__ import annotations

import logging

import asyncpg
import psycopg
import psycopg_pool
from sqlalchemy import exc as sa_exc

from haico.errors import Conflict, DomainError, StoreUnavailable

_OUTAGE_TYPES: tuple[type[BaseException], ...] = (
    ConnectionError,  # refused, reset, aborted
    TimeoutError,
    sa_exc.TimeoutError,  # the engine's pool found no connection in time
    asyncpg.exceptions.ConnectionDoesNotExistError,
    asyncpg.exceptions.ConnectionFailureError,
    asyncpg.exceptions.CannotConnectNowError,
    asyncpg.exceptions.InterfaceError,
    psycopg.OperationalError,
    psycopg_pool.PoolTimeout,
)


# The base types an outage arrives as (each checked with `is_store_outage`): the HTTP
# face registers a handler for each, so the answer is an ordinary response.
DRIVER_ERRORS: tuple[type[Exception], ...] = (
    OSError,
    sa_exc.SQLAlchemyError,
    asyncpg.exceptions.PostgresError,
    asyncpg.exceptions.InterfaceError,
    psycopg.Error,
    psycopg_pool.PoolTimeout,
)


# SQLSTATEs of a transaction the database aborted to resolve a race (deadlock,
# serialization failure): nothing was written, and the same request can be retried.
_RETRYABLE_SQLSTATES = frozenset({"40P01", "40001"})


def _chain(exc: BaseException) -> list[BaseException]:
    seen: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and all(current is not e for e in seen):
        seen.append(current)
        current = current.__cause__ or current.__context__
    return seen


def is_lost_race(exc: BaseException) -> bool:
    """Whether `exc`, or an error it wraps, is a transaction the database rolled back
    to break a deadlock or a serialization conflict."""
    for error in _chain(exc):
        code = getattr(error, "sqlstate", None) or getattr(error, "pgcode", None)
        if code in _RETRYABLE_SQLSTATES:
            return True
    return False


def is_store_outage(exc: BaseException) -> bool:
    """Whether `exc`, or an error it wraps, says the database could not be reached."""
    for error in _chain(exc):
        if isinstance(error, _OUTAGE_TYPES):
            return True
        if isinstance(error, sa_exc.DBAPIError) and error.connection_invalidated:
            return True
        if isinstance(error, OSError) and not isinstance(error, FileNotFoundError):
            return True
    return False


LOST_RACE_MESSAGE = "a concurrent change won; nothing was written, retry"


def as_domain_error(exc: BaseException) -> DomainError | None:
    """The answer a face gives to a driver error it did not expect: 503 when the
    database is unreachable, 409 when the database rolled the transaction back to
    break a race; None for anything else (a bug: a 500)."""
    if is_store_outage(exc):
        return StoreUnavailable(StoreUnavailable.MESSAGE)
    if is_lost_race(exc):
        return Conflict(LOST_RACE_MESSAGE)
    return None


def log_failure(logger: logging.Logger, message: str, exc: BaseException) -> None:
    """Log a failed background step: one line when the database is unreachable (the
    step repeats until it is back, and a traceback each time would bury the log), the
    traceback otherwise."""
    if is_store_outage(exc):
        logger.warning("%s: the database is unreachable (%s)", message, type(exc).__name__)
    else:
        logger.error(message, exc_info=exc)
