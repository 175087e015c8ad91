"""Queries of "what if": model profiles and jobs (no rules here)."""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import Job, ModelProfile, User

ACTIVE_JOB_STATES = ("queued", "running")


async def get_profile(s: AsyncSession, profile_id: str) -> ModelProfile | None:
    return await s.get(ModelProfile, profile_id)


async def profiles_of(s: AsyncSession, user_id: int) -> list[ModelProfile]:
    rows = await s.execute(
        select(ModelProfile).where(ModelProfile.user_id == user_id).order_by(ModelProfile.name)
    )
    return list(rows.scalars())


async def get_job(s: AsyncSession, job_id: str, *, for_update: bool = False) -> Job | None:
    stmt = select(Job).where(Job.id == job_id)
    if for_update:
        stmt = stmt.with_for_update()
    return (await s.execute(stmt)).scalars().first()


async def lock_user(s: AsyncSession, user_id: int) -> None:
    """Lock the user's row for the rest of the transaction (on PostgreSQL; SQLite's
    BEGIN IMMEDIATE serialises writers anyway): two replays of one user that count
    the user's active jobs and then add one never interleave."""
    await s.execute(select(User.id).where(User.id == user_id).with_for_update())


async def active_jobs_of(s: AsyncSession, user_id: int) -> int:
    rows = await s.execute(
        select(func.count())
        .select_from(Job)
        .where(Job.user_id == user_id, Job.state.in_(ACTIVE_JOB_STATES))
    )
    return int(rows.scalar_one())


async def abandoned_candidates(s: AsyncSession) -> list[Job]:
    """Queued or running jobs (the sweep decides which are abandoned)."""
    rows = await s.execute(select(Job).where(Job.state.in_(ACTIVE_JOB_STATES)))
    return list(rows.scalars())


async def jobs_of_family(s: AsyncSession, root_thread_id: str, user_id: int) -> list[Job]:
    rows = await s.execute(
        select(Job)
        .where(Job.root_thread_id == root_thread_id, Job.user_id == user_id)
        .order_by(Job.created_at.desc())
        .limit(50)
    )
    return list(rows.scalars())
