"""The research ledger: node provenance, workspace edit authorship, notes.

Revision ID: 0012
Revises: 0011
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0012"
down_revision: str | Sequence[str] | None = "0011"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _thread_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["thread_id"],
        ["conversations.thread_id"],
        name=f"fk_{table}_thread_id_conversations",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "node_provenance",
        sa.Column("thread_id", sa.String(35), nullable=False),
        sa.Column("turn_index", sa.Integer(), nullable=False),
        sa.Column("provider", sa.String(20), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("profile_id", sa.String(80), nullable=True),
        sa.Column("params", _JSON, nullable=False),
        sa.Column("instructions_sha256", sa.String(64), nullable=True),
        sa.Column("input_tokens", sa.Integer(), nullable=True),
        sa.Column("output_tokens", sa.Integer(), nullable=True),
        sa.Column("tokens_estimated", sa.Boolean(), nullable=False),
        sa.Column("first_token_ms", sa.Integer(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("tool_calls", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        _thread_fk("node_provenance"),
        sa.PrimaryKeyConstraint("thread_id", "turn_index", name="pk_node_provenance"),
    )
    op.create_table(
        "workspace_edits",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("thread_id", sa.String(35), nullable=False),
        sa.Column("turn_index", sa.Integer(), nullable=False),
        sa.Column("surface", sa.String(20), nullable=False),
        sa.Column("uid", sa.String(64), nullable=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("origin", sa.String(10), nullable=False),
        sa.Column("author", sa.String(200), nullable=True),
        sa.Column("at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        _thread_fk("workspace_edits"),
        sa.PrimaryKeyConstraint("id", name="pk_workspace_edits"),
    )
    op.create_index("ix_workspace_edits_node", "workspace_edits", ["thread_id", "turn_index"])
    op.create_table(
        "notes",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("root_thread_id", sa.String(35), nullable=False),
        sa.Column("thread_id", sa.String(35), nullable=False),
        sa.Column("turn_index", sa.Integer(), nullable=False),
        sa.Column("text", sa.Text(), nullable=False),
        sa.Column("codes", _JSON, nullable=False),
        sa.Column("author", sa.String(200), nullable=False),
        sa.Column(
            "created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.Column(
            "updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False
        ),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name="fk_notes_user_id_users", ondelete="CASCADE"
        ),
        _thread_fk("notes"),
        sa.PrimaryKeyConstraint("id", name="pk_notes"),
    )
    op.create_index("ix_notes_node", "notes", ["thread_id", "turn_index"])
    op.create_index("ix_notes_user_id", "notes", ["user_id"])
    op.create_index("ix_notes_root_thread_id", "notes", ["root_thread_id"])


def downgrade() -> None:
    op.drop_table("notes")
    op.drop_table("workspace_edits")
    op.drop_table("node_provenance")
