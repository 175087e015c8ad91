"""Documents may point at a stored body instead of holding a copy.

Revision ID: 0006
Revises: 0005
"""

from collections.abc import Sequence

import sqlalchemy as sa

from alembic import op

revision: str = "0006"
down_revision: str | Sequence[str] | None = "0005"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.add_column(sa.Column("body_hash", sa.String(length=64), nullable=True))
        batch.create_foreign_key(
            op.f("fk_documents_body_hash_document_bodies"),
            "document_bodies",
            ["body_hash"],
            ["hash"],
        )


def downgrade() -> None:
    with op.batch_alter_table("documents") as batch:
        batch.drop_constraint(op.f("fk_documents_body_hash_document_bodies"), type_="foreignkey")
        batch.drop_column("body_hash")
