"""A participant's own session: what it reads of it, its consent and its finish.

Only a participant token reaches these (anyone else → 403). Consent moves `joined` to
`consented`; until then, when the study has consent text, the access rule refuses the
participant every write (403 `consent_required`). Finish moves it to `finished` (again
is a no-op): from the next request on, the rule lets it read its family only. Each is
one update of the participant's row, in one transaction.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models_studies import Study, StudyCondition, StudyParticipant
from haico.db.repositories import studies as repo
from haico.domain import now
from haico.errors import Forbidden, Unauthorized
from haico.schemas.studies import ParticipantCondition, ParticipantMe, StudyRef
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed
from haico.services.studies import features, study_events


def _me(p: StudyParticipant, study: Study, cond: StudyCondition) -> ParticipantMe:
    return ParticipantMe(
        participant=features.label(p.number),
        study=StudyRef(id=study.id, name=study.name, consent=study.consent),
        condition=ParticipantCondition(
            id=cond.id, name=cond.name, features=features.wire(cond.features)
        ),
        thread_id=p.thread_id,
        state="finished"
        if p.state == "finished"
        else ("consented" if p.state == "consented" else "joined"),
    )


async def _session(
    s: AsyncSession, principal: Principal, *, for_update: bool = False
) -> tuple[StudyParticipant, Study, StudyCondition]:
    access.permit(principal, Deed.SESSION)
    if principal.session is None:
        raise Forbidden("only a study participant has a session here")
    found = await repo.session_of(s, principal.session.participant_id, for_update=for_update)
    if found is None:
        raise Unauthorized("this participant no longer exists")
    return found


async def me(db: Database, *, principal: Principal) -> ParticipantMe:
    async with db.read() as s:
        return _me(*await _session(s, principal))


async def consent(db: Database, *, principal: Principal) -> ParticipantMe:
    """Record the participant's consent (again, or after finishing, changes nothing)."""
    async with db.transaction() as s:
        p, study, cond = await _session(s, principal, for_update=True)
        if p.state == "joined":
            p.state = "consented"
            p.consented_at = p.last_active_at = now()
            await s.flush()
            await study_events.log_consented(
                s, study_id=study.id, participant=features.label(p.number), thread_id=p.thread_id
            )
        return _me(p, study, cond)


async def finish(db: Database, *, principal: Principal) -> ParticipantMe:
    """End the participant's session: its family is read-only for it from now on."""
    async with db.transaction() as s:
        p, study, cond = await _session(s, principal, for_update=True)
        if p.state != "finished":
            p.state = "finished"
            p.finished_at = p.last_active_at = now()
            await s.flush()
            await study_events.log_finished(
                s, study_id=study.id, participant=features.label(p.number), thread_id=p.thread_id
            )
        return _me(p, study, cond)
