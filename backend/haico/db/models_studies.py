"""ORM models of studies: one task given to many participants under conditions.

A study (`studies`) belongs to its owner and lists its conditions (`study_conditions`,
in the order the owner gave them), its members (`study_members`: coders and viewers
who read every family of it) and its participants (`study_participants`). A
participant is a user row of its own (`users.is_link`, as a share link's grantee:
never listed, never given an API token) that owns one family seeded from the task;
its `pt_…` token is stored only as a SHA-256 digest. `models` registers these tables
with the rest.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from haico.db.base import NAME_LEN, Base, BigId, JsonType, Stamp
from haico.domain import now

STUDY_ID_LEN = 40


def new_study_id() -> str:
    return "sy_" + secrets.token_hex(12)


def new_condition_id() -> str:
    return "sc_" + secrets.token_hex(12)


def new_participant_id() -> str:
    return "sp_" + secrets.token_hex(12)


class Study(Base):
    """The study: its task (objective, document, preferences, todos as plain JSON),
    consent text, state (`open` or `closed`: a closed study takes no new joins) and the
    join token, kept so that the owner can read it again (it only makes participants)."""

    __tablename__ = "studies"

    id: Mapped[str] = mapped_column(String(STUDY_ID_LEN), primary_key=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(200))
    description: Mapped[str] = mapped_column(Text, default="")
    task: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    consent: Mapped[str | None] = mapped_column(Text, nullable=True)
    # A codebook (coding, a later feature) the study's coders use; no foreign key yet.
    codebook_id: Mapped[str | None] = mapped_column(String(STUDY_ID_LEN), nullable=True)
    state: Mapped[str] = mapped_column(String(10), default="open")
    join_token: Mapped[str] = mapped_column(String(100), unique=True)
    reveal: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class StudyCondition(Base):
    """One condition: a model profile (null: the server's default) and the interface
    features it allows (`{graph, branching, merge, whatif}`, each a bool)."""

    __tablename__ = "study_conditions"

    id: Mapped[str] = mapped_column(String(STUDY_ID_LEN), primary_key=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"), index=True)
    position: Mapped[int] = mapped_column(Integer)
    name: Mapped[str] = mapped_column(String(NAME_LEN))
    profile_id: Mapped[str | None] = mapped_column(
        ForeignKey("model_profiles.id", ondelete="SET NULL"), nullable=True
    )
    features: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)

    __table_args__ = (
        UniqueConstraint("study_id", "position"),
        UniqueConstraint("study_id", "name"),
    )


class StudyMember(Base):
    """A user who reads the study and every family of it: a `coder` or a `viewer`."""

    __tablename__ = "study_members"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())

    __table_args__ = (UniqueConstraint("study_id", "user_id"),)


class StudyParticipant(Base):
    """One participant: `number` is its place in join order (`P001` on the wire), the
    condition it was assigned, its own user row and its family's root. `state` is
    `joined`, `consented` or `finished`."""

    __tablename__ = "study_participants"

    id: Mapped[str] = mapped_column(String(STUDY_ID_LEN), primary_key=True)
    study_id: Mapped[str] = mapped_column(ForeignKey("studies.id", ondelete="CASCADE"))
    number: Mapped[int] = mapped_column(Integer)
    condition_id: Mapped[str] = mapped_column(
        ForeignKey("study_conditions.id", ondelete="CASCADE"), index=True
    )
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), unique=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), unique=True
    )
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    state: Mapped[str] = mapped_column(String(12), default="joined")
    joined_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    consented_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    last_active_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (UniqueConstraint("study_id", "number"),)


__all__ = [
    "Study",
    "StudyCondition",
    "StudyMember",
    "StudyParticipant",
    "new_condition_id",
    "new_participant_id",
    "new_study_id",
]
