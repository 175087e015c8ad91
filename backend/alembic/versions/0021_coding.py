"""Coding: codebooks and their codes, codings of a node (a whole step or a span of its
text), pairwise judgments of sibling nodes, and a family's reveal flag.

Revision ID: 0021
Revises: 0020
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0021"
down_revision: str | Sequence[str] | None = "0020"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _stamp(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _user(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=f"fk_{table}_user_id_users", ondelete="CASCADE"
    )


def upgrade() -> None:
    with op.batch_alter_table("conversations") as batch:
        batch.add_column(
            sa.Column("reveal_codings", sa.Boolean(), server_default=sa.false(), nullable=False)
        )
    op.create_table(
        "codebooks",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        _stamp("created_at"),
        _stamp("updated_at"),
        _user("codebooks"),
        sa.PrimaryKeyConstraint("id", name="pk_codebooks"),
    )
    op.create_index("ix_codebooks_user_id", "codebooks", ["user_id"])
    op.create_table(
        "codebook_codes",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("codebook_id", _ID, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("color", sa.String(20), nullable=True),
        sa.Column("parent_id", _ID, nullable=True),
        sa.Column("retired", sa.Boolean(), server_default=sa.false(), nullable=False),
        _stamp("created_at"),
        sa.ForeignKeyConstraint(
            ["codebook_id"],
            ["codebooks.id"],
            name="fk_codebook_codes_codebook_id_codebooks",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["codebook_codes.id"],
            name="fk_codebook_codes_parent_id_codebook_codes",
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_codebook_codes"),
    )
    op.create_index("ix_codebook_codes_codebook_id", "codebook_codes", ["codebook_id"])
    op.create_table(
        "codings",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("root_thread_id", sa.String(35), nullable=False),
        sa.Column("thread_id", sa.String(35), nullable=False),
        sa.Column("turn_index", sa.Integer(), nullable=False),
        sa.Column("code_id", _ID, nullable=False),
        sa.Column("field", sa.String(20), nullable=True),
        sa.Column("span_start", sa.Integer(), nullable=True),
        sa.Column("span_end", sa.Integer(), nullable=True),
        sa.Column("memo", sa.Text(), nullable=False),
        sa.Column("coder", sa.String(200), nullable=False),
        sa.Column("imported_author", sa.String(200), nullable=True),
        _stamp("created_at"),
        _user("codings"),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["conversations.thread_id"],
            name="fk_codings_thread_id_conversations",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["code_id"],
            ["codebook_codes.id"],
            name="fk_codings_code_id_codebook_codes",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_codings"),
    )
    op.create_index("ix_codings_user_id", "codings", ["user_id"])
    op.create_index("ix_codings_root_thread_id", "codings", ["root_thread_id"])
    op.create_index("ix_codings_code_id", "codings", ["code_id"])
    op.create_index("ix_codings_node", "codings", ["thread_id", "turn_index"])
    op.create_table(
        "judgments",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("root_thread_id", sa.String(35), nullable=False),
        sa.Column("a", sa.String(80), nullable=False),
        sa.Column("b", sa.String(80), nullable=False),
        sa.Column("preferred", sa.String(4), nullable=False),
        sa.Column("criterion", sa.String(200), nullable=True),
        sa.Column("rationale", sa.Text(), nullable=True),
        sa.Column("judge", sa.String(200), nullable=False),
        sa.Column("imported_author", sa.String(200), nullable=True),
        _stamp("created_at"),
        _user("judgments"),
        sa.PrimaryKeyConstraint("id", name="pk_judgments"),
    )
    op.create_index("ix_judgments_user_id", "judgments", ["user_id"])
    op.create_index("ix_judgments_root_thread_id", "judgments", ["root_thread_id"])


def downgrade() -> None:
    op.drop_table("judgments")
    op.drop_table("codings")
    op.drop_table("codebook_codes")
    op.drop_table("codebooks")
    with op.batch_alter_table("conversations") as batch:
        batch.drop_column("reveal_codings")
