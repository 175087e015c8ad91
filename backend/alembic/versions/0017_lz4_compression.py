"""Large text and JSON columns compressed with lz4 on PostgreSQL, where the server has it.

PostgreSQL compresses a value over about 2 KB before storing it (TOAST), with pglz
unless a column says otherwise. A merge or a turn writes a 100 KB document several
times (the live row, its stored version, its search entry); lz4 compresses it several
times faster, for a few percent more space. lz4 exists from PostgreSQL 14 on, in builds
made with it (Debian's and the official images are): the upgrade asks the server
whether it can, and changes nothing where it cannot. Values already stored keep
their compression; new ones use lz4. SQLite: nothing to do.

Revision ID: 0017
Revises: 0016
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0017"
down_revision: str | Sequence[str] | None = "0016"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

COLUMNS = (
    ("documents", "content"),
    ("document_bodies", "content"),
    ("search_entries", "content"),
    ("artifacts", "content"),
    ("workspace_snapshots", "preferences"),
    ("workspace_snapshots", "todos"),
    ("workspace_snapshots", "merged_state"),
)


def _has_lz4() -> bool:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return False
    methods = bind.execute(
        sa.text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
    ).scalar()
    return methods is not None and "lz4" in methods


def _set(method: str) -> None:
    if not _has_lz4():
        return
    for table, column in COLUMNS:
        op.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET COMPRESSION {method}")


def upgrade() -> None:
    _set("lz4")


def downgrade() -> None:
    _set("default")
