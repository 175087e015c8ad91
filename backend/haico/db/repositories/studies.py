"""Queries of studies: a study with its conditions, members and participants, who reads
a study family, and a participant's session (no rules here)."""

from __future__ import annotations

from sqlalchemy import delete, func, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import User
from haico.db.models_studies import Study, StudyCondition, StudyMember, StudyParticipant


async def get(s: AsyncSession, study_id: str, *, for_update: bool = False) -> Study | None:
    stmt = select(Study).where(Study.id == study_id)
    if for_update:
        stmt = stmt.with_for_update()
    return (await s.execute(stmt)).scalar_one_or_none()


async def by_join_token(s: AsyncSession, token: str, *, lock: bool = True) -> Study | None:
    """The study whose join link carries `token`; with `lock`, its row locked for the
    rest of the transaction (on PostgreSQL; SQLite serialises writers from BEGIN): joins
    to one study are counted and numbered one at a time."""
    stmt = select(Study).where(Study.join_token == token)
    if lock:
        stmt = stmt.with_for_update()
        # the row again, not the one the session may hold from the unlocked read
        stmt = stmt.execution_options(populate_existing=True)
    return (await s.execute(stmt)).scalar_one_or_none()


async def member_role(s: AsyncSession, study_id: str, user_id: int) -> str | None:
    stmt = select(StudyMember.role).where(
        StudyMember.study_id == study_id, StudyMember.user_id == user_id
    )
    return (await s.execute(stmt)).scalar_one_or_none()


async def readable_by(s: AsyncSession, user_id: int) -> list[tuple[Study, str | None]]:
    """The studies `user_id` owns or is a member of, newest first, with its member role
    (None where it is the owner)."""
    stmt = (
        select(Study, StudyMember.role)
        .outerjoin(
            StudyMember,
            (StudyMember.study_id == Study.id) & (StudyMember.user_id == user_id),
        )
        .where(or_(Study.owner_id == user_id, StudyMember.user_id == user_id))
        .order_by(Study.created_at.desc(), Study.id)
    )
    return [(st, role) for st, role in (await s.execute(stmt)).all()]


async def conditions(s: AsyncSession, study_ids: list[str]) -> list[StudyCondition]:
    """The conditions of the studies, each study's in its listed order."""
    if not study_ids:
        return []
    stmt = (
        select(StudyCondition)
        .where(StudyCondition.study_id.in_(study_ids))
        .order_by(StudyCondition.study_id, StudyCondition.position)
    )
    return list((await s.execute(stmt)).scalars())


async def participant_counts(s: AsyncSession, study_ids: list[str]) -> dict[str, int]:
    if not study_ids:
        return {}
    stmt = (
        select(StudyParticipant.study_id, func.count())
        .where(StudyParticipant.study_id.in_(study_ids))
        .group_by(StudyParticipant.study_id)
    )
    return {sid: int(n) for sid, n in (await s.execute(stmt)).all()}


async def counts_by_condition(s: AsyncSession, study_id: str) -> dict[str, int]:
    stmt = (
        select(StudyParticipant.condition_id, func.count())
        .where(StudyParticipant.study_id == study_id)
        .group_by(StudyParticipant.condition_id)
    )
    return {cid: int(n) for cid, n in (await s.execute(stmt)).all()}


async def last_number(s: AsyncSession, study_id: str) -> int:
    stmt = select(func.max(StudyParticipant.number)).where(StudyParticipant.study_id == study_id)
    return int((await s.execute(stmt)).scalar() or 0)


async def members(s: AsyncSession, study_id: str) -> list[tuple[StudyMember, User]]:
    stmt = (
        select(StudyMember, User)
        .join(User, User.id == StudyMember.user_id)
        .where(StudyMember.study_id == study_id)
        .order_by(StudyMember.id)
    )
    return [(m, u) for m, u in (await s.execute(stmt)).all()]


async def member(s: AsyncSession, study_id: str, user_id: int) -> StudyMember | None:
    stmt = select(StudyMember).where(
        StudyMember.study_id == study_id, StudyMember.user_id == user_id
    )
    return (await s.execute(stmt)).scalar_one_or_none()


async def remove_member(s: AsyncSession, study_id: str, user_id: int) -> int:
    done = await s.execute(
        delete(StudyMember).where(StudyMember.study_id == study_id, StudyMember.user_id == user_id)
    )
    return int(getattr(done, "rowcount", 0) or 0)


async def session_by_token_hash(
    s: AsyncSession, token_hash: str
) -> tuple[StudyParticipant, Study, StudyCondition, User] | None:
    """The participant a `pt_…` token names, with its study, condition and user row."""
    stmt = (
        select(StudyParticipant, Study, StudyCondition, User)
        .join(Study, Study.id == StudyParticipant.study_id)
        .join(StudyCondition, StudyCondition.id == StudyParticipant.condition_id)
        .join(User, User.id == StudyParticipant.user_id)
        .where(StudyParticipant.token_hash == token_hash)
    )
    row = (await s.execute(stmt)).first()
    return (row[0], row[1], row[2], row[3]) if row is not None else None


async def session_of(
    s: AsyncSession, participant_id: str, *, for_update: bool = False
) -> tuple[StudyParticipant, Study, StudyCondition] | None:
    stmt = (
        select(StudyParticipant, Study, StudyCondition)
        .join(Study, Study.id == StudyParticipant.study_id)
        .join(StudyCondition, StudyCondition.id == StudyParticipant.condition_id)
        .where(StudyParticipant.id == participant_id)
    )
    if for_update:
        stmt = stmt.with_for_update(of=StudyParticipant)
    row = (await s.execute(stmt)).first()
    return (row[0], row[1], row[2]) if row is not None else None


async def participant_state(s: AsyncSession, user_id: int) -> tuple[str, bool] | None:
    """A participant's state and whether its study asks for consent (the access rule's
    one read for a participant)."""
    stmt = (
        select(StudyParticipant.state, Study.consent)
        .join(Study, Study.id == StudyParticipant.study_id)
        .where(StudyParticipant.user_id == user_id)
    )
    row = (await s.execute(stmt)).first()
    return (row[0], bool(row[1])) if row is not None else None


async def role_on_family(s: AsyncSession, root_thread_id: str, user_id: int) -> str | None:
    """`owner`, `coder` or `viewer`: the user's standing on the study whose
    participant's family `root_thread_id` is (None: no such study, or not its owner
    nor a member)."""
    stmt = (
        select(Study.owner_id, StudyMember.role)
        .join(StudyParticipant, StudyParticipant.study_id == Study.id)
        .outerjoin(
            StudyMember,
            (StudyMember.study_id == Study.id) & (StudyMember.user_id == user_id),
        )
        .where(
            StudyParticipant.thread_id == root_thread_id,
            or_(Study.owner_id == user_id, StudyMember.user_id == user_id),
        )
        .limit(1)
    )
    row = (await s.execute(stmt)).first()
    if row is None:
        return None
    return "owner" if row.owner_id == user_id else str(row.role)


async def study_of_family(
    s: AsyncSession, root_thread_id: str
) -> tuple[Study, StudyParticipant, StudyCondition] | None:
    """The study a participant's family belongs to, with its participant and condition."""
    stmt = (
        select(Study, StudyParticipant, StudyCondition)
        .join(StudyParticipant, StudyParticipant.study_id == Study.id)
        .join(StudyCondition, StudyCondition.id == StudyParticipant.condition_id)
        .where(StudyParticipant.thread_id == root_thread_id)
        .limit(1)
    )
    row = (await s.execute(stmt)).first()
    return (row[0], row[1], row[2]) if row is not None else None


async def participants_of(
    s: AsyncSession, study_id: str
) -> list[tuple[StudyParticipant, StudyCondition]]:
    """A study's participants (join order) with their conditions."""
    stmt = (
        select(StudyParticipant, StudyCondition)
        .join(StudyCondition, StudyCondition.id == StudyParticipant.condition_id)
        .where(StudyParticipant.study_id == study_id)
        .order_by(StudyParticipant.number)
    )
    return [(r[0], r[1]) for r in (await s.execute(stmt)).all()]
