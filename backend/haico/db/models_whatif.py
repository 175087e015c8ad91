"""The what-if tables: users' model profiles and durable background jobs (replays)."""

from __future__ import annotations

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

from haico.db.base import NAME_LEN, THREAD_ID_LEN, Base, JsonType, Stamp
from haico.domain import now


class ModelProfile(Base):
    """A user's named agent settings: provider, model, parameters, instructions. Keys
    and base URLs are server settings and never stored here."""

    __tablename__ = "model_profiles"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(NAME_LEN))
    provider: Mapped[str] = mapped_column(String(20))
    model: Mapped[str] = mapped_column(String(200))
    params: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    instructions: Mapped[str] = mapped_column(Text, default="")
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())

    __table_args__ = (UniqueConstraint("user_id", "name"),)


class Job(Base):
    """A durable background job (a replay): its state, progress and what it built.
    `process_id` and `heartbeat_at` say which process runs it and that it is alive."""

    __tablename__ = "jobs"

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), index=True)
    kind: Mapped[str] = mapped_column(String(20))
    state: Mapped[str] = mapped_column(String(20))
    spec: Mapped[dict[str, Any]] = mapped_column(JsonType, default=dict)
    done: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[int] = mapped_column(Integer, default=0)
    thread_ids: Mapped[list[str]] = mapped_column(JsonType, default=list)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    process_id: Mapped[str | None] = mapped_column(String(200), nullable=True)
    heartbeat_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
