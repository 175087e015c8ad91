"""Declarative base with an explicit constraint naming convention and portable types."""

from __future__ import annotations

from datetime import datetime
from typing import Any, cast

import orjson
from sqlalchemy import JSON, BigInteger, DateTime, Integer, MetaData, Table, Text
from sqlalchemy.dialects.postgresql import JSONB, TSVECTOR
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase
from sqlalchemy.types import TypeDecorator

from haico.domain import now

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

# SQLite only auto-increments INTEGER PRIMARY KEY, so big ids fall back to Integer there.
BigId = BigInteger().with_variant(Integer, "sqlite")
JsonType = JSON().with_variant(JSONB(), "postgresql")


def json_text(value: Any) -> str:
    """The text of a JSON value as the app stores it (the engine's serializer for
    `JsonType`, and the action log's): orjson, a snapshot's 200 items in a tenth of
    json.dumps's time. Keys that are not strings become strings, as json.dumps makes
    them."""
    return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()


# A PostgreSQL text-search vector; SQLite has none and keeps the column empty.
SearchVector = Text().with_variant(TSVECTOR(), "postgresql")


class Stamp(TypeDecorator[datetime]):
    """A moment the application records (created, captured, started, ...): UTC with
    microseconds, written by the application on both databases. The column's Python
    default (`now`) covers the inserts SQLAlchemy runs itself; an insert it does not fill
    (one nested in a statement as a CTE, or run on the driver directly, `haico.db.driver`)
    leaves the value unset, and it is stamped here as it is bound. The database's own
    default is never used by the app: SQLite's `CURRENT_TIMESTAMP` keeps whole seconds."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime:
        return now() if value is None else value


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


def table_of(model: type[Base]) -> Table:
    """A mapped class's table. Statements run with parameters are built on it, not on
    the class: an ORM-enabled INSERT or UPDATE given parameters runs as an ORM bulk
    operation."""
    return cast(Table, model.__table__)


# Column sizes shared by the model modules.
THREAD_ID_LEN = 35  # "th_" + 32 hex
NAME_LEN = 80  # a branch name
