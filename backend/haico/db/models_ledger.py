"""ORM models of the research ledger: each node's provenance, the authorship of every
workspace change, and the researcher's notes. They sit beside the transcript and the
snapshots, keyed by node (thread and turn); `models` registers them with the rest.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Float,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from haico.db.base import THREAD_ID_LEN, Base, BigId, JsonType, Stamp
from haico.domain import now

# ---- the research ledger: provenance, authorship, notes (beside the transcript) ----


class NodeProvenance(Base):
    """Who and what produced a node: provider, model, settings, tokens, timings, cost.

    One row per node, written in the transaction that closes its turn (failed and
    cancelled turns keep what was measured). No prompt builder reads it.
    """

    __tablename__ = "node_provenance"

    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), primary_key=True
    )
    turn_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    provider: Mapped[str] = mapped_column(String(20))
    model: Mapped[str] = mapped_column(String(200))
    profile_id: Mapped[str | None] = mapped_column(String(80), nullable=True)
    params: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    profile_name: Mapped[str | None] = mapped_column(String(80), nullable=True)
    ignored_params: Mapped[list[str] | None] = mapped_column(JsonType, nullable=True)
    instructions_sha256: Mapped[str | None] = mapped_column(String(64), nullable=True)
    input_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    output_tokens: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tokens_estimated: Mapped[bool] = mapped_column(Boolean, default=False)
    first_token_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    duration_ms: Mapped[int | None] = mapped_column(Integer, nullable=True)
    tool_calls: Mapped[int] = mapped_column(Integer, default=0)
    cost_usd: Mapped[float | None] = mapped_column(Float, nullable=True)


class WorkspaceEdit(Base):
    """One workspace change and who made it (`origin`: user, agent, merge, replay,
    import). `turn_index` is the thread's turn clock at the change: a turn's tool
    calls and, by the snapshot rule, the hand edits made after it belong to that node.
    """

    __tablename__ = "workspace_edits"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE")
    )
    turn_index: Mapped[int] = mapped_column(Integer)
    surface: Mapped[str] = mapped_column(String(20))
    uid: Mapped[str | None] = mapped_column(String(64), nullable=True)
    kind: Mapped[str] = mapped_column(String(10))
    origin: Mapped[str] = mapped_column(String(10))
    author: Mapped[str | None] = mapped_column(String(200), nullable=True)
    at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())

    __table_args__ = (Index("ix_workspace_edits_node", "thread_id", "turn_index"),)


class Note(Base):
    """A researcher's note on a node, with free-form codes. Never shown to the model."""

    __tablename__ = "notes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), index=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE")
    )
    turn_index: Mapped[int] = mapped_column(Integer)
    text: Mapped[str] = mapped_column(Text)
    codes: Mapped[list[str]] = mapped_column(JsonType, default=list)
    author: Mapped[str] = mapped_column(String(200), default="")
    # An imported note: the author its document recorded (the importer is `author`).
    imported_author: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())

    __table_args__ = (Index("ix_notes_node", "thread_id", "turn_index"),)
