"""Studies: one task given to many participants under conditions, with members who
read every family of it.

Revision ID: 0020
Revises: 0019
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0020"
down_revision: str | Sequence[str] | None = "0019"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _now(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def _fk(
    table: str, column: str, target: str, key: str, ondelete: str = "CASCADE"
) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], [f"{target}.{key}"], name=f"fk_{table}_{column}_{target}", ondelete=ondelete
    )


def upgrade() -> None:
    op.create_table(
        "studies",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("owner_id", _ID, nullable=False),
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("task", _JSON, nullable=False),
        sa.Column("consent", sa.Text(), nullable=True),
        sa.Column("codebook_id", sa.String(40), nullable=True),
        sa.Column("state", sa.String(10), nullable=False),
        sa.Column("join_token", sa.String(100), nullable=False),
        sa.Column("reveal", sa.Boolean(), server_default=sa.false(), nullable=False),
        _now("created_at"),
        _fk("studies", "owner_id", "users", "id"),
        sa.PrimaryKeyConstraint("id", name="pk_studies"),
        sa.UniqueConstraint("join_token", name="uq_studies_join_token"),
    )
    op.create_index("ix_studies_owner_id", "studies", ["owner_id"])
    op.create_table(
        "study_conditions",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("study_id", sa.String(40), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("profile_id", sa.String(40), nullable=True),
        sa.Column("features", _JSON, nullable=False),
        _fk("study_conditions", "study_id", "studies", "id"),
        _fk("study_conditions", "profile_id", "model_profiles", "id", "SET NULL"),
        sa.PrimaryKeyConstraint("id", name="pk_study_conditions"),
        sa.UniqueConstraint("study_id", "position", name="uq_study_conditions_study_id_position"),
        sa.UniqueConstraint("study_id", "name", name="uq_study_conditions_study_id_name"),
    )
    op.create_index("ix_study_conditions_study_id", "study_conditions", ["study_id"])
    op.create_table(
        "study_members",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("study_id", sa.String(40), nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("role", sa.String(10), nullable=False),
        _now("created_at"),
        _fk("study_members", "study_id", "studies", "id"),
        _fk("study_members", "user_id", "users", "id"),
        sa.PrimaryKeyConstraint("id", name="pk_study_members"),
        sa.UniqueConstraint("study_id", "user_id", name="uq_study_members_study_id_user_id"),
    )
    op.create_index("ix_study_members_user_id", "study_members", ["user_id"])
    op.create_table(
        "study_participants",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("study_id", sa.String(40), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("condition_id", sa.String(40), nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("thread_id", sa.String(35), nullable=False),
        sa.Column("token_hash", sa.String(64), nullable=False),
        sa.Column("state", sa.String(12), nullable=False),
        _now("joined_at"),
        sa.Column("consented_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_active_at", sa.DateTime(timezone=True), nullable=True),
        _fk("study_participants", "study_id", "studies", "id"),
        _fk("study_participants", "condition_id", "study_conditions", "id"),
        _fk("study_participants", "user_id", "users", "id"),
        _fk("study_participants", "thread_id", "conversations", "thread_id"),
        sa.PrimaryKeyConstraint("id", name="pk_study_participants"),
        sa.UniqueConstraint("study_id", "number", name="uq_study_participants_study_id_number"),
        sa.UniqueConstraint("user_id", name="uq_study_participants_user_id"),
        sa.UniqueConstraint("thread_id", name="uq_study_participants_thread_id"),
        sa.UniqueConstraint("token_hash", name="uq_study_participants_token_hash"),
    )
    op.create_index("ix_study_participants_condition_id", "study_participants", ["condition_id"])


def downgrade() -> None:
    op.drop_table("study_participants")
    op.drop_table("study_members")
    op.drop_table("study_conditions")
    op.drop_table("studies")
