"""Artifacts get a stable uid that copies keep (branches, forks, merges, export).

Existing rows are given the identity a merge matched them by until now: a digest of
their kind, title and content, so the copies a branch or fork made of one artifact
share one uid (copies keep all three).

Revision ID: 0013
Revises: 0012
"""

import hashlib
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0013"
down_revision: str | Sequence[str] | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_BATCH = 500


def _uid(kind: str, title: str, content: str) -> str:
    return hashlib.sha256(f"{kind}\x00{title}\x00{content}".encode()).hexdigest()[:32]


def upgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.add_column(sa.Column("uid", sa.String(length=32), nullable=True))
    bind = op.get_bind()
    art = sa.table(
        "artifacts",
        sa.column("id", sa.BigInteger()),
        sa.column("kind", sa.String()),
        sa.column("title", sa.String()),
        sa.column("content", sa.Text()),
        sa.column("uid", sa.String()),
    )
    after = 0
    while True:
        rows = bind.execute(
            sa.select(art.c.id, art.c.kind, art.c.title, art.c.content)
            .where(art.c.id > after)
            .order_by(art.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            break
        bind.execute(
            sa.update(art)
            .where(art.c.id == sa.bindparam("b_id"))
            .values(uid=sa.bindparam("b_uid")),
            [{"b_id": r.id, "b_uid": _uid(r.kind, r.title, r.content)} for r in rows],
        )
        after = rows[-1].id
    with op.batch_alter_table("artifacts") as batch:
        batch.alter_column("uid", existing_type=sa.String(length=32), nullable=False)


def downgrade() -> None:
    with op.batch_alter_table("artifacts") as batch:
        batch.drop_column("uid")
