"""Sharing: a role on a family for a named user or through a link.

Revision ID: 0015
Revises: 0014
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0015"
down_revision: str | Sequence[str] | None = "0014"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.add_column(
            sa.Column("is_link", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.create_table(
        "shares",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("root_thread_id", sa.String(35), nullable=False),
        sa.Column("grantee_id", _ID, nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=True),
        sa.Column("created_by", _ID, nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(
            ["root_thread_id"],
            ["conversations.thread_id"],
            name="fk_shares_root_thread_id_conversations",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["grantee_id"], ["users.id"], name="fk_shares_grantee_id_users", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["created_by"], ["users.id"], name="fk_shares_created_by_users", ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name="pk_shares"),
        sa.UniqueConstraint("token_hash", name="uq_shares_token_hash"),
    )
    op.create_index("ix_shares_root_thread_id", "shares", ["root_thread_id"])
    op.create_index("ix_shares_grantee_id", "shares", ["grantee_id"])


def downgrade() -> None:
    op.drop_table("shares")
    with op.batch_alter_table("users") as batch:
        batch.drop_column("is_link")
