"""What differs between PostgreSQL and SQLite, chosen once when the engine is created.

`Database` stores the chosen `Dialect` in every session's `info`; repositories ask
`dialect_of(session)` instead of looking at the driver.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, String, any_, bindparam, func, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession


@dataclass(frozen=True)
class Dialect:
    name: str

    @property
    def is_postgres(self) -> bool:
        return self.name == "postgresql"

    def insert(self, table: Any) -> Any:
        """An INSERT that supports `.on_conflict_do_nothing()` on this database."""
        return postgresql.insert(table) if self.is_postgres else sqlite.insert(table)

    def one_of(self, column: ColumnElement[str], ids: Collection[str]) -> ColumnElement[bool]:
        """`column IN ids` with the ids bound as ONE value, however many there are.

        An expanding IN-list renders a placeholder per id (slow to compile for
        thousands, and capped at 32k by both drivers); an array (PostgreSQL) or a JSON
        list read with `json_each` (SQLite) has neither problem.
        """
        values = sorted(ids)
        if self.is_postgres:
            return column == any_(bindparam(None, values, type_=ARRAY(String())))
        each = func.json_each(json.dumps(values)).table_valued("value")
        return column.in_(select(each.c.value))


POSTGRES = Dialect("postgresql")
SQLITE = Dialect("sqlite")


def dialect_for_url(url: str) -> Dialect:
    return SQLITE if url.startswith("sqlite") else POSTGRES


def dialect_of(session: AsyncSession) -> Dialect:
    dialect = session.info.get("dialect")
    if not isinstance(dialect, Dialect):
        raise RuntimeError("sessions must come from app.db.engine.Database")
    return dialect
