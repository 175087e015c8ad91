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


def is_store_outage(exc: BaseException) -> bool:
    """Whether `exc`, or an error it wraps, says the database could not be reached."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, _OUTAGE_TYPES):
            return True
        if isinstance(current, sa_exc.DBAPIError) and current.connection_invalidated:
            return True
        if isinstance(current, OSError) and not isinstance(current, FileNotFoundError):
            return True
        current = current.__cause__ or current.__context__
    return False


def log_failure(logger: logging.Logger, message: str, exc: BaseException) -> None:
    """Log a failed background step: one line when the database is unreachable (the
    step repeats until it is back, and a traceback each time would bury the log), the
    traceback otherwise."""
    if is_store_outage(exc):
        logger.warning("%s: the database is unreachable (%s)", message, type(exc).__name__)
    else:
        logger.error(message, exc_info=exc)
