"""Branches: child thread -> parent thread at a branch point, with a status.

Revision ID: 0002
Revises: 0001
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0002"
down_revision: str | Sequence[str] | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "conversation_branches",
        sa.Column("thread_id", sa.String(length=35), nullable=False),
        sa.Column("parent_thread_id", sa.String(length=35), nullable=False),
        sa.Column("branch_point_turn", sa.Integer(), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=10), nullable=False),
        sa.Column("dirty", sa.Boolean(), nullable=False),
        sa.Column(
            "created_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["conversations.thread_id"],
            name=op.f("fk_conversation_branches_thread_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("thread_id", name=op.f("pk_conversation_branches")),
    )
    op.create_index(
        op.f("ix_conversation_branches_parent_thread_id"),
        "conversation_branches",
        ["parent_thread_id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index(
        op.f("ix_conversation_branches_parent_thread_id"), table_name="conversation_branches"
    )
    op.drop_table("conversation_branches")
