"""What Alembic compares and migrates: every table but the checkpointer's."""

from __future__ import annotations

from typing import Any

# LangGraph's checkpointer creates and owns these; Alembic never touches them.
CHECKPOINTER_TABLES = frozenset(
    {"checkpoints", "checkpoint_blobs", "checkpoint_writes", "checkpoint_migrations", "writes"}
)


def include_object(
    obj: Any, name: str | None, type_: str, reflected: bool, compare_to: Any
) -> bool:
    return not (type_ == "table" and name in CHECKPOINTER_TABLES)
