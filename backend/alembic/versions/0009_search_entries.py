"""The search index: user messages, replies and documents of every node.

Backfill: each recorded turn's user message (the stored preview) and reply, and each
thread's live document at its latest owned turn. New turns index themselves when
they complete (`services/search.py`).

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0009"
down_revision: str | Sequence[str] | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# The text-search configuration; must match `db/repositories/search.py`.
TS_CONFIG = "english"
# Documents are indexed up to this many characters (a tsvector holds at most 1 MB).
MAX_INDEXED = 100_000

_OWNED = (
    "FROM workspace_snapshots s JOIN conversations c ON c.thread_id = s.thread_id "
    "LEFT JOIN conversation_branches b ON b.thread_id = s.thread_id "
    "WHERE s.turn_index > COALESCE(b.branch_point_turn, c.forked_from_turn, 0) "
)


def _backfill(tsv: str) -> None:
    for kind, column in (("user", "s.user_message"), ("assistant", "s.reply")):
        op.execute(
            "INSERT INTO search_entries "
            "(user_id, root_thread_id, thread_id, turn_index, kind, content, tsv) "
            f"SELECT c.user_id, c.root_thread_id, s.thread_id, s.turn_index, '{kind}', "
            f"{column}, {tsv.format(column)} {_OWNED} AND {column} <> ''"
        )
    body = (
        "COALESCE(NULLIF(d.content, ''), "
        "(SELECT db.content FROM document_bodies db WHERE db.hash = d.body_hash), '')"
    )
    body = f"substr({body}, 1, {MAX_INDEXED})"
    op.execute(
        "INSERT INTO search_entries "
        "(user_id, root_thread_id, thread_id, turn_index, kind, content, tsv) "
        f"SELECT c.user_id, c.root_thread_id, c.thread_id, c.turn_index, 'document', "
        f"{body}, {tsv.format(body)} "
        "FROM documents d JOIN conversations c ON c.thread_id = d.thread_id "
        "LEFT JOIN conversation_branches b ON b.thread_id = c.thread_id "
        "WHERE c.turn_index > COALESCE(b.branch_point_turn, c.forked_from_turn, 0) "
        f"AND {body} <> ''"
    )


def upgrade() -> None:
    is_postgres = op.get_bind().dialect.name == "postgresql"
    op.create_table(
        "search_entries",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("user_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("root_thread_id", sa.String(length=35), nullable=False),
        sa.Column("thread_id", sa.String(length=35), nullable=False),
        sa.Column("turn_index", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=12), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("digest", sa.String(length=64), nullable=True),
        sa.Column(
            "tsv", sa.Text().with_variant(postgresql.TSVECTOR(), "postgresql"), nullable=True
        ),
        sa.ForeignKeyConstraint(
            ["thread_id"],
            ["conversations.thread_id"],
            name=op.f("fk_search_entries_thread_id_conversations"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
            name=op.f("fk_search_entries_user_id_users"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_search_entries")),
    )
    op.create_index(
        "ix_search_entries_node", "search_entries", ["thread_id", "turn_index"], unique=False
    )
    op.create_index(op.f("ix_search_entries_user_id"), "search_entries", ["user_id"], unique=False)
    op.create_index(
        "ix_search_entries_tsv",
        "search_entries",
        ["tsv"],
        unique=False,
        postgresql_using="gin",
    )
    _backfill(f"to_tsvector('{TS_CONFIG}', {{}})" if is_postgres else "NULL")


def downgrade() -> None:
    op.drop_index("ix_search_entries_tsv", table_name="search_entries")
    op.drop_index(op.f("ix_search_entries_user_id"), table_name="search_entries")
    op.drop_index("ix_search_entries_node", table_name="search_entries")
    op.drop_table("search_entries")
