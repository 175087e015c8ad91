"""A study: created, listed, read and changed by its owner; read by its members.

Who reaches a study: its owner (everything), its members (coders and viewers: they read
it, never the join token), nobody else: a study the caller neither owns nor is a member
of answers 404 that names nothing, as an unknown id does. Creating is one transaction
(the study and its conditions): on failure nothing exists.
"""

from __future__ import annotations

import secrets
from typing import Literal

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models_coding import Codebook
from haico.db.models_studies import Study, StudyCondition, new_condition_id, new_study_id
from haico.db.repositories import studies as repo
from haico.db.repositories import whatif as profiles_repo
from haico.domain import now
from haico.errors import Forbidden, InvalidInput, NotFound
from haico.schemas.studies import (
    ConditionOut,
    StudyCreate,
    StudyOut,
    StudyPatch,
    Task,
)
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed
from haico.services.studies import features
from haico.services.studies.revealing import announce, study_families

JOIN_PREFIX = "st_"
NO_STUDY = "no such study"
StudyRole = Literal["owner", "coder", "viewer"]


def new_join_token() -> str:
    return JOIN_PREFIX + secrets.token_urlsafe(24)


def to_out(
    study: Study, conditions: list[StudyCondition], *, participants: int, role: StudyRole
) -> StudyOut:
    return StudyOut(
        id=study.id,
        name=study.name,
        description=study.description,
        task=Task.model_validate(study.task or {}),
        conditions=[
            ConditionOut(
                id=c.id, name=c.name, profile_id=c.profile_id, features=features.wire(c.features)
            )
            for c in conditions
        ],
        consent=study.consent,
        codebook_id=int(study.codebook_id) if study.codebook_id else None,
        state="closed" if study.state == "closed" else "open",
        join_token=study.join_token if role == "owner" else None,
        participants=participants,
        reveal=study.reveal,
        created_at=study.created_at,
        role=role,
    )


async def readable(
    s: AsyncSession, principal: Principal, study_id: str, *, for_update: bool = False
) -> tuple[Study, StudyRole]:
    """The study and the caller's role on it; 404 for anyone who is neither its owner
    nor a member (and for no such study)."""
    access.permit(principal, Deed.STUDIES)
    study = await repo.get(s, study_id, for_update=for_update)
    if study is None:
        raise NotFound(NO_STUDY)
    if study.owner_id == principal.id:
        return study, "owner"
    role = await repo.member_role(s, study_id, principal.id)
    if role not in ("coder", "viewer"):
        raise NotFound(NO_STUDY)
    return study, "coder" if role == "coder" else "viewer"


async def owned(
    s: AsyncSession, principal: Principal, study_id: str, *, for_update: bool = False
) -> Study:
    """The study, for its owner; a member → 403, anyone else → 404."""
    study, role = await readable(s, principal, study_id, for_update=for_update)
    if role != "owner":
        raise Forbidden("only the study's owner may do this")
    return study


async def _profile_of(s: AsyncSession, principal: Principal, profile_id: str | None) -> str | None:
    """A condition's profile: one of the owner's, or the server's default (None)."""
    if profile_id is None or profile_id == "default":
        return None
    row = await profiles_repo.get_profile(s, profile_id)
    if row is None or row.user_id != principal.id:
        raise InvalidInput(f"conditions: no profile {profile_id!r} of yours")
    return row.id


async def _codebook_of(
    s: AsyncSession, principal: Principal, codebook_id: int | None
) -> str | None:
    """The study's codebook: one of the owner's (stored as its id's text), or none."""
    if codebook_id is None:
        return None
    book = await s.get(Codebook, codebook_id)
    if book is None or book.user_id != principal.id:
        raise InvalidInput(f"codebook_id: no codebook {codebook_id} of yours")
    return str(book.id)


def _check(db: Database, body: StudyCreate) -> None:
    names = [c.name.strip() for c in body.conditions]
    if any(not n for n in names):
        raise InvalidInput("conditions: a name must not be blank")
    if len(set(names)) != len(names):
        raise InvalidInput("conditions: names must be unique")
    limits = db.limits
    task = body.task
    if len(task.preferences) > limits.items or len(task.todos) > limits.items:
        raise InvalidInput(f"task: at most {limits.items} preferences and todos each")
    if task.document is not None and len(task.document.content) > limits.document_chars:
        raise InvalidInput(f"task: the document holds at most {limits.document_chars} characters")


async def create(db: Database, *, principal: Principal, body: StudyCreate) -> StudyOut:
    """A new open study with its conditions in the listed order and a join token."""
    access.permit(principal, Deed.STUDIES)
    _check(db, body)
    async with db.transaction() as s:
        study = Study(
            id=new_study_id(),
            owner_id=principal.id,
            name=body.name.strip(),
            description=body.description,
            task=body.task.model_dump(),
            consent=body.consent if body.consent and body.consent.strip() else None,
            codebook_id=await _codebook_of(s, principal, body.codebook_id),
            state="open",
            join_token=new_join_token(),
            reveal=False,
            created_at=now(),
        )
        s.add(study)
        await s.flush()
        conditions = [
            StudyCondition(
                id=new_condition_id(),
                study_id=study.id,
                position=i,
                name=c.name.strip(),
                profile_id=await _profile_of(s, principal, c.profile_id),
                features=features.stored(c.features),
            )
            for i, c in enumerate(body.conditions)
        ]
        s.add_all(conditions)
        await s.flush()
        return to_out(study, conditions, participants=0, role="owner")


async def list_for(db: Database, *, principal: Principal) -> list[StudyOut]:
    """The studies the caller owns or is a member of, newest first."""
    access.permit(principal, Deed.STUDIES)
    async with db.read() as s:
        rows = await repo.readable_by(s, principal.id)
        ids = [st.id for st, _ in rows]
        conds = await repo.conditions(s, ids)
        counts = await repo.participant_counts(s, ids)
    by_study: dict[str, list[StudyCondition]] = {}
    for c in conds:
        by_study.setdefault(c.study_id, []).append(c)
    return [
        to_out(
            st,
            by_study.get(st.id, []),
            participants=counts.get(st.id, 0),
            role="owner"
            if st.owner_id == principal.id
            else ("coder" if r == "coder" else "viewer"),
        )
        for st, r in rows
    ]


async def get(db: Database, *, principal: Principal, study_id: str) -> StudyOut:
    async with db.read() as s:
        study, role = await readable(s, principal, study_id)
        return await _out(s, study, role)


async def _out(s: AsyncSession, study: Study, role: StudyRole) -> StudyOut:
    conds = await repo.conditions(s, [study.id])
    counts = await repo.participant_counts(s, [study.id])
    return to_out(study, conds, participants=counts.get(study.id, 0), role=role)


async def patch(db: Database, *, principal: Principal, study_id: str, body: StudyPatch) -> StudyOut:
    """Rename, describe, open or close the study, or reveal codings (owner only)."""
    async with db.transaction() as s:
        study = await owned(s, principal, study_id, for_update=True)
        if body.name is not None:
            if not body.name.strip():
                raise InvalidInput("name: must not be blank")
            study.name = body.name.strip()
        if body.description is not None:
            study.description = body.description
        if body.state is not None:
            study.state = body.state
        revealing = body.reveal is not None and bool(study.reveal) != body.reveal
        if body.reveal is not None:
            study.reveal = body.reveal
        await s.flush()
        if revealing:
            await announce(s, await study_families(s, study.id), reveal=bool(study.reveal))
        return await _out(s, study, "owner")
