"""A study's coding: its owner and members read it (`studies.study.readable`); its
coders are its members with the `coder` role. Its families are its participants'.
The study's owner sees every coding of them, members once the study reveals
(`rule.sees_every_coding`); agreement is over every family of the study at once."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.repositories import coding as repo
from haico.db.repositories import studies as studies_repo
from haico.errors import Forbidden
from haico.schemas.coding import AgreementOut
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.coding.agreement import compute
from haico.services.coding.codebooks import study_codebook
from haico.services.studies.features import label
from haico.services.studies.study import readable


@dataclass(frozen=True)
class StudyReader:
    study_id: str
    name: str
    owner_id: int
    sees_all: bool
    codebook: int | None
    # (root thread, participant, condition) of each participant, in join order.
    families: list[tuple[str, str, str]]


async def study_reader(s: AsyncSession, principal: Principal, study_id: str) -> StudyReader:
    """The caller's standing on the study: 404 to anyone but its owner and members."""
    study, role = await readable(s, principal, study_id)
    runs = role == "owner"
    participants = await studies_repo.participants_of(s, study.id)
    return StudyReader(
        study_id=study.id,
        name=study.name,
        owner_id=study.owner_id,
        sees_all=access.sees_every_coding(Role.VIEWER, revealed=study.reveal, runs_study=runs),
        codebook=study_codebook(study),
        families=[(p.thread_id, label(p.number), c.name) for p, c in participants],
    )


async def study_agreement(
    db: Database, *, principal: Principal, study_id: str, coders: list[str] | None
) -> AgreementOut:
    """Agreement over every family of the study among `coders` (default: the study's
    coders)."""
    async with db.read() as s:
        reader = await study_reader(s, principal, study_id)
        if not reader.sees_all:
            raise Forbidden("codings are blind until the study's owner reveals them")
        rows = await repo.agreement_rows(s, [root for root, _, _ in reader.families])
        if coders is None:
            members = await studies_repo.members(s, reader.study_id)
            coders = sorted(user.name for m, user in members if m.role == "coder")
        names = await repo.code_names(s, {r[4] for r in rows})
    return compute(rows, coders, names)
