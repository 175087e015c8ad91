"""The large columns PostgreSQL compresses with lz4, whichever way the schema is made.

A server's schema comes from the migrations (0017 switches these columns to lz4 where
the server has it); the tests and the benchmarks make theirs with `create_all`. Both
must store values the same way, or a benchmark measures a database no server runs:
so `create_all` applies the same setting right after it creates each table. pglz, the
default, compresses a 100 KB document several times slower than lz4.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import MetaData, Table, event, text
from sqlalchemy.engine import Connection

LZ4_COLUMNS: dict[str, tuple[str, ...]] = {
    "documents": ("content",),
    "document_bodies": ("content",),
    "search_entries": ("content",),
    "artifacts": ("content",),
    "workspace_snapshots": ("preferences", "todos", "merged_state"),
}


def has_lz4(connection: Connection) -> bool:
    """Whether the server compresses with lz4 (PostgreSQL 14 on, built with it)."""
    if connection.dialect.name != "postgresql":
        return False
    methods = connection.execute(
        text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
    ).scalar()
    return methods is not None and "lz4" in methods


def _after_create(table: Table, connection: Connection, **_: Any) -> None:
    if not has_lz4(connection):
        return
    for column in LZ4_COLUMNS[table.name]:
        connection.exec_driver_sql(
            f'ALTER TABLE "{table.name}" ALTER COLUMN "{column}" SET COMPRESSION lz4'
        )


def register(metadata: MetaData) -> None:
    """Have `metadata.create_all` set lz4 on `LZ4_COLUMNS` (PostgreSQL with lz4 only)."""
    for name in LZ4_COLUMNS:
        event.listen(metadata.tables[name], "after_create", _after_create)
