"""An active turn keeps its user message, so a crash cannot lose it.

Revision ID: 0007
Revises: 0006
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0007"
down_revision: str | Sequence[str] | None = "0006"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("active_turns") as batch:
        batch.add_column(sa.Column("user_message", sa.Text(), nullable=False, server_default=""))


def downgrade() -> None:
    with op.batch_alter_table("active_turns") as batch:
        batch.drop_column("user_message")
