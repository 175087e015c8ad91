"""The action log: every committed change with its server sequence number.

Revision ID: 0005
Revises: 0004
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0005"
down_revision: str | Sequence[str] | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "action_log",
        sa.Column(
            "seq",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("root_thread_id", sa.String(length=35), nullable=True),
        sa.Column("channel", sa.String(length=200), nullable=False),
        sa.Column(
            "action",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("seq", name=op.f("pk_action_log")),
    )
    op.create_index("ix_action_log_root_seq", "action_log", ["root_thread_id", "seq"])


def downgrade() -> None:
    op.drop_index("ix_action_log_root_seq", table_name="action_log")
    op.drop_table("action_log")
