"""Branch names, and deleted preferences and todos kept as rejected decisions.

Snapshots gain a `rejected` list (format 3); older rows keep null and read as "none
rejected".

Revision ID: 0008
Revises: 0007
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0008"
down_revision: str | Sequence[str] | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.add_column(sa.Column("name", sa.String(length=80), nullable=True))
    with op.batch_alter_table("workspace_snapshots") as batch:
        batch.add_column(
            sa.Column(
                "rejected",
                sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
                nullable=True,
            )
        )
    op.create_table(
        "rejected_items",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("thread_id", sa.String(length=35), nullable=False),
        sa.Column("uid", sa.String(length=32), nullable=False),
        sa.Column("surface", sa.String(length=20), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("rejected_after_turn", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["conversations.thread_id"],
            name=op.f("fk_rejected_items_thread_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rejected_items")),
    )
    op.create_index(
        op.f("ix_rejected_items_thread_id"), "rejected_items", ["thread_id"], unique=False
    )


def downgrade() -> None:
    op.drop_index(op.f("ix_rejected_items_thread_id"), table_name="rejected_items")
    op.drop_table("rejected_items")
    with op.batch_alter_table("workspace_snapshots") as batch:
        batch.drop_column("rejected")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("name")
