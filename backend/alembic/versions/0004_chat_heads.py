"""History state: one head and working thread per family.

Revision ID: 0004
Revises: 0003
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0004"
down_revision: str | Sequence[str] | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "chat_heads",
        sa.Column("root_thread_id", sa.String(length=35), nullable=False),
        sa.Column("head_turn_id", sa.String(length=80), nullable=True),
        sa.Column("working_thread_id", sa.String(length=35), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.PrimaryKeyConstraint("root_thread_id", name=op.f("pk_chat_heads")),
    )


def downgrade() -> None:
    op.drop_table("chat_heads")
