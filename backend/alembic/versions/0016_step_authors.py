"""Audit of a shared family: a node names the grantee who made it.

`workspace_snapshots.author` is the name of the user who sent the turn or made the
merge when that was not the family's owner (an editor of a shared family); null for
the owner's own nodes and for every node made before this revision.

Revision ID: 0016
Revises: 0015
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0016"
down_revision: str | Sequence[str] | None = "0015"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workspace_snapshots") as batch:
        batch.add_column(sa.Column("author", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("workspace_snapshots") as batch:
        batch.drop_column("author")
