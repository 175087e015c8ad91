"""What differs between PostgreSQL and SQLite, chosen once when the engine is created.

`Database` stores the chosen `Dialect` in every session's `info`; repositories ask
`dialect_of(session)` instead of looking at the driver.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from sqlalchemy import ColumnElement, Select, String, any_, bindparam, func, literal_column, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.sql.dml import UpdateBase

from haico.db.driver import fetch_in_session


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
        raise RuntimeError("sessions must come from haico.db.engine.Database")
    return dialect


# A write for `execute_all`: a statement and its parameters. Statements meant to run
# often are built once, with named parameters: building a SQLAlchemy statement costs
# more than sending it.
Write = tuple[UpdateBase, dict[str, Any]]


# Guards: writes that must touch exactly one row, or fail the whole statement they run
# in (on PostgreSQL, in `log.append_rows`). They are the checks of a change prepared
# from reads made without locks: "this row is still as I read it". A failed guard
# raises an error whose message holds `MOVED_MARK` (`moved`).
GUARDS: set[UpdateBase] = set()
MOVED_MARK = "haico-guard-failed"


def guard(statement: UpdateBase) -> UpdateBase:
    """Register a prebuilt write as a guard (see `GUARDS`)."""
    GUARDS.add(statement)
    return statement


class GuardFailed(Exception):
    """A guard run on its own (`execute_all`) touched no row."""


def moved(exc: BaseException) -> bool:
    """Whether a database error is a failed guard."""
    return MOVED_MARK in str(exc)


@lru_cache(maxsize=64)
def _together(statements: tuple[UpdateBase, ...]) -> Select[Any]:
    ctes = [st.cte(f"w{i}") for i, st in enumerate(statements)]
    return select(literal_column("1")).add_cte(*ctes)


def merged_params(writes: Sequence[Write]) -> dict[str, Any]:
    """The parameters of writes that run as one statement, in one namespace; a name
    given two different values is refused (`ValueError`) before anything runs."""
    params: dict[str, Any] = {}
    for _, more in writes:
        for name, value in more.items():
            if name in params and params[name] != value:
                raise ValueError(f"execute_all: parameter {name!r} has two values")
            params[name] = value
    return params


async def execute_all(session: AsyncSession, *writes: Write | None) -> None:
    """Run independent writes (`None`s skipped) in the session's transaction.

    On PostgreSQL they go in ONE round trip, as data-modifying CTEs of one statement
    (built once per combination of statements); SQLite runs them one after another.
    So the writes must not depend on each other: they all see the same snapshot, and
    none sees another's rows. Give each a different table (or different rows):
    PostgreSQL does not say in which order the CTEs of one statement touch their rows.
    A constraint violation in any of them fails the whole statement, as it would fail
    the transaction. Parameters share one namespace: a name used by two statements
    must mean the same value.
    """
    given = [w for w in writes if w is not None]
    params = merged_params(given)
    guarded = any(st in GUARDS for st, _ in given)
    if dialect_of(session).is_postgres and len(given) > 1 and not guarded:
        together = _together(tuple(st for st, _ in given))
        if await fetch_in_session(session, together, params) is None:
            await session.execute(together, params)
        return
    for st, more in given:
        result = await session.execute(st, more)
        if st in GUARDS and getattr(result, "rowcount", 1) != 1:
            raise GuardFailed(MOVED_MARK)
