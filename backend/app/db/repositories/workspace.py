"""Queries over the workspace tables and snapshots. Reads only: services commit."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import inspect, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import defer

from app.db.models import (
    Artifact,
    Document,
    DocumentBody,
    Preference,
    Todo,
    WorkspaceSnapshot,
)


async def get_document(session: AsyncSession, thread_id: str) -> Document | None:
    stmt = select(Document).where(Document.thread_id == thread_id)
    return (await session.execute(stmt)).scalar_one_or_none()


async def list_preferences(session: AsyncSession, thread_id: str) -> Sequence[Preference]:
    stmt = (
        select(Preference)
        .where(Preference.thread_id == thread_id)
        .order_by(Preference.position, Preference.id)
    )
    return (await session.execute(stmt)).scalars().all()


async def list_todos(session: AsyncSession, thread_id: str) -> Sequence[Todo]:
    stmt = select(Todo).where(Todo.thread_id == thread_id).order_by(Todo.position, Todo.id)
    return (await session.execute(stmt)).scalars().all()


async def list_artifacts(
    session: AsyncSession, thread_id: str, *, max_turn: int | None = None
) -> Sequence[Artifact]:
    stmt = select(Artifact).where(Artifact.thread_id == thread_id)
    if max_turn is not None:
        stmt = stmt.where(Artifact.turn_index <= max_turn)
    return (await session.execute(stmt.order_by(Artifact.id))).scalars().all()


async def get_snapshot(
    session: AsyncSession, thread_id: str, turn_index: int, *, light: bool = False
) -> WorkspaceSnapshot | None:
    """One snapshot row; `light` leaves its item lists unloaded (see `load_items`)."""
    stmt = select(WorkspaceSnapshot).where(
        WorkspaceSnapshot.thread_id == thread_id, WorkspaceSnapshot.turn_index == turn_index
    )
    if light:
        stmt = stmt.options(defer(WorkspaceSnapshot.preferences), defer(WorkspaceSnapshot.todos))
    return (await session.execute(stmt)).scalar_one_or_none()


async def load_items(session: AsyncSession, snap: WorkspaceSnapshot) -> None:
    """Load a light snapshot's item lists (async sessions cannot load them on access)."""
    unloaded = inspect(snap).unloaded & {"preferences", "todos"}
    if unloaded:
        await session.refresh(snap, attribute_names=sorted(unloaded))


async def get_body(session: AsyncSession, digest: str) -> str | None:
    row = await session.get(DocumentBody, digest)
    return row.content if row else None
