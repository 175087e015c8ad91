"""Merge nodes: a turn record says whether it is a turn or a merge, and what it merged.

Existing records are turns (the server default); `merged_from` is the source node id
of a merge (null for a turn), `merged_state` the source's workspace as it was merged.

Revision ID: 0010
Revises: 0009
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0010"
down_revision: str | Sequence[str] | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("workspace_snapshots") as batch:
        batch.add_column(
            sa.Column("kind", sa.String(length=10), nullable=False, server_default="turn")
        )
        batch.add_column(sa.Column("merged_from", sa.String(length=80), nullable=True))
        batch.add_column(
            sa.Column(
                "merged_state",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )


def downgrade() -> None:
    with op.batch_alter_table("workspace_snapshots") as batch:
        batch.drop_column("merged_state")
        batch.drop_column("merged_from")
        batch.drop_column("kind")
