"""Big trees: branch summaries, archive, and the path each user last chose at a fork.

Revision ID: 0011
Revises: 0010
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0011"
down_revision: str | Sequence[str] | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.add_column(sa.Column("summary", sa.Text(), nullable=True))
        batch.add_column(sa.Column("summary_turn", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("archived_at", sa.DateTime(timezone=True), nullable=True))
    op.create_table(
        "path_choices",
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("root_thread_id", sa.String(length=35), nullable=False),
        sa.Column("fork_node_id", sa.String(length=80), nullable=False),
        sa.Column("child_node_id", sa.String(length=80), nullable=False),
        sa.Column(
            "updated_at",
            sa.DateTime(timezone=True),
            server_default=sa.func.now(),
            nullable=False,
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_path_choices_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint(
            "user_id", "root_thread_id", "fork_node_id", name=op.f("pk_path_choices")
        ),
    )


def downgrade() -> None:
    op.drop_table("path_choices")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("archived_at")
        batch.drop_column("summary_turn")
        batch.drop_column("summary")
