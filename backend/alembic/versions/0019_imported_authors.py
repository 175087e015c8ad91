"""Imports no longer take a document's word for who wrote what: the importer authors
every node and note of the copy, and the author the document recorded is kept beside
it as `imported_author` (null for everything made here, and for every row written
before this revision).

Revision ID: 0019
Revises: 0018
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0019"
down_revision: str | Sequence[str] | None = "0018"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLES = ("workspace_snapshots", "notes")


def upgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.add_column(sa.Column("imported_author", sa.String(length=200), nullable=True))


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:
            batch.drop_column("imported_author")
