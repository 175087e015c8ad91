"""Shares get an id a client sees that cannot be counted (`shr_` + 24 random hex).

The integer key counts up from 1, so a stranger trying `DELETE /api/shares/1, 2, …`
learned how many shares exist. Existing rows are given a random uid each; the integer
key stays the row's internal key.

Revision ID: 0018
Revises: 0017
"""

import secrets
from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0018"
down_revision: str | Sequence[str] | None = "0017"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("shares") as batch:
        batch.add_column(sa.Column("uid", sa.String(length=40), nullable=True))
    bind = op.get_bind()
    shares = sa.table("shares", sa.column("id", sa.BigInteger()), sa.column("uid", sa.String()))
    ids = bind.execute(sa.select(shares.c.id).order_by(shares.c.id)).scalars().all()
    if ids:
        bind.execute(
            sa.update(shares)
            .where(shares.c.id == sa.bindparam("b_id"))
            .values(uid=sa.bindparam("b_uid")),
            [{"b_id": i, "b_uid": "shr_" + secrets.token_hex(12)} for i in ids],
        )
    with op.batch_alter_table("shares") as batch:
        batch.alter_column("uid", existing_type=sa.String(length=40), nullable=False)
        batch.create_unique_constraint("uq_shares_uid", ["uid"])


def downgrade() -> None:
    with op.batch_alter_table("shares") as batch:
        batch.drop_constraint("uq_shares_uid", type_="unique")
        batch.drop_column("uid")
