"""What if: model profiles, a branch's profile, provenance's profile name and ignored
parameters, durable replay jobs.

Revision ID: 0014
Revises: 0013
"""

from collections.abc import Sequence

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from alembic import op

revision: str = "0014"
down_revision: str | Sequence[str] | None = "0013"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(), "postgresql")
_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _user_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id"], ["users.id"], name=f"fk_{table}_user_id_users", ondelete="CASCADE"
    )


def _now(name: str) -> sa.Column:  # type: ignore[type-arg]
    return sa.Column(name, sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False)


def upgrade() -> None:
    op.add_column("conversations", sa.Column("profile_id", sa.String(40), nullable=True))
    op.add_column("node_provenance", sa.Column("profile_name", sa.String(80), nullable=True))
    op.add_column("node_provenance", sa.Column("ignored_params", _JSON, nullable=True))
    op.create_table(
        "model_profiles",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("name", sa.String(80), nullable=False),
        sa.Column("provider", sa.String(20), nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("params", _JSON, nullable=False),
        sa.Column("instructions", sa.Text(), nullable=False),
        _now("created_at"),
        _user_fk("model_profiles"),
        sa.PrimaryKeyConstraint("id", name="pk_model_profiles"),
        sa.UniqueConstraint("user_id", "name", name="uq_model_profiles_user_id_name"),
    )
    op.create_table(
        "jobs",
        sa.Column("id", sa.String(40), nullable=False),
        sa.Column("user_id", _ID, nullable=False),
        sa.Column("root_thread_id", sa.String(35), nullable=False),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("state", sa.String(20), nullable=False),
        sa.Column("spec", _JSON, nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("thread_ids", _JSON, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("cancel_requested", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("process_id", sa.String(200), nullable=True),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        _now("created_at"),
        _now("updated_at"),
        _user_fk("jobs"),
        sa.PrimaryKeyConstraint("id", name="pk_jobs"),
    )
    op.create_index("ix_jobs_user_id", "jobs", ["user_id"])
    op.create_index("ix_jobs_root_thread_id", "jobs", ["root_thread_id"])


def downgrade() -> None:
    op.drop_table("jobs")
    op.drop_table("model_profiles")
    op.drop_column("node_provenance", "ignored_params")
    op.drop_column("node_provenance", "profile_name")
    op.drop_column("conversations", "profile_id")
