"""ORM models of coding: codebooks and their codes, the codings coders apply to a
node (a whole step or a span of its text), and pairwise judgments of sibling nodes.
Like the ledger's tables they are keyed by node (thread and turn) and read by no
prompt builder; `models` registers them with the rest.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, false, func
from sqlalchemy.orm import Mapped, mapped_column

from haico.db.base import THREAD_ID_LEN, Base, BigId, Stamp
from haico.domain import now

NODE_ID_LEN = 80


class Codebook(Base):
    """A user's named set of codes (a study may name one for its coders)."""

    __tablename__ = "codebooks"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class Code(Base):
    """One code of a codebook. Retired, never deleted: codings keep pointing at it."""

    __tablename__ = "codebook_codes"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    codebook_id: Mapped[int] = mapped_column(
        ForeignKey("codebooks.id", ondelete="CASCADE"), index=True
    )
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    color: Mapped[str | None] = mapped_column(String(20), nullable=True)
    parent_id: Mapped[int | None] = mapped_column(
        ForeignKey("codebook_codes.id", ondelete="SET NULL"), nullable=True
    )
    retired: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class Coding(Base):
    """A code applied by a coder to a node: the whole step (no field), or the code
    points `span_start..span_end` of its user message or reply."""

    __tablename__ = "codings"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), index=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE")
    )
    turn_index: Mapped[int] = mapped_column(Integer)
    code_id: Mapped[int] = mapped_column(
        ForeignKey("codebook_codes.id", ondelete="CASCADE"), index=True
    )
    field: Mapped[str | None] = mapped_column(String(20), nullable=True)
    span_start: Mapped[int | None] = mapped_column(Integer, nullable=True)
    span_end: Mapped[int | None] = mapped_column(Integer, nullable=True)
    memo: Mapped[str] = mapped_column(Text, default="")
    coder: Mapped[str] = mapped_column(String(200), default="")
    # An imported coding: the coder its document recorded (the importer is `coder`).
    imported_author: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())

    __table_args__ = (Index("ix_codings_node", "thread_id", "turn_index"),)


class Judgment(Base):
    """Which of two sibling nodes is better (or a tie), by a criterion, and why."""

    __tablename__ = "judgments"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), index=True)
    a: Mapped[str] = mapped_column(String(NODE_ID_LEN))
    b: Mapped[str] = mapped_column(String(NODE_ID_LEN))
    preferred: Mapped[str] = mapped_column(String(4))
    criterion: Mapped[str | None] = mapped_column(String(200), nullable=True)
    rationale: Mapped[str | None] = mapped_column(Text, nullable=True)
    judge: Mapped[str] = mapped_column(String(200), default="")
    imported_author: Mapped[str | None] = mapped_column(String(200), nullable=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
