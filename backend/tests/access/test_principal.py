"""The rule for each kind of principal: a user reaches what it owns or is shared with
it; a study participant and a link reach their own family only and never do what the
rule's table keeps from them (tests/studies has the participant over the wire)."""

from __future__ import annotations

import uuid

import pytest
from fastapi import FastAPI

from haico.db.engine import Database
from haico.errors import Forbidden
from haico.schemas.studies import ConditionIn, StudyCreate
from haico.services.access import rule, users
from haico.services.access.principal import Feature, Kind, Principal, Session
from haico.services.access.rule import Deed
from haico.services.families import conversations
from haico.services.history import state as history
from haico.services.studies import joining, study
from tests.helpers import db_of

SESSION = Session("sp_x", "sy_x", "sc_x", frozenset(Feature))


@pytest.fixture
def db(app: FastAPI) -> Database:
    return db_of(app)


async def test_a_participant_reaches_its_own_family_only(db: Database) -> None:
    researcher, _ = await users.create(db, name=f"researcher-{uuid.uuid4().hex[:8]}")
    made = await study.create(
        db,
        principal=researcher,
        body=StudyCreate(name="s", conditions=[ConditionIn(name="a")]),
    )
    assert made.join_token is not None
    joined = await joining.join(db, token=made.join_token)
    participant = await joining.authenticate(db, token=joined.token)
    assert participant.kind is Kind.PARTICIPANT and participant.family == joined.thread_id
    other = await conversations.create(db, principal=researcher, title="the researcher's")

    got = await conversations.get(db, principal=participant, thread_id=joined.thread_id)
    assert got.thread_id == joined.thread_id
    # Its own family it works in but never deletes; any other it does not reach.
    with pytest.raises(Forbidden):
        await history.soft_delete(db, principal=participant, thread_id=joined.thread_id)
    with pytest.raises(Forbidden):
        await conversations.get(db, principal=participant, thread_id=other.thread_id)
    # A participant principal named for a family that is not its participant's own
    # (its user row owns it, but no study made it) reaches nothing either.
    stray = Principal(
        participant.id,
        participant.name,
        kind=Kind.PARTICIPANT,
        family=other.thread_id,
        session=participant.session,
    )
    with pytest.raises(Forbidden):
        await conversations.get(db, principal=stray, thread_id=other.thread_id)


@pytest.mark.parametrize("kind", [Kind.LINK, Kind.PARTICIPANT])
async def test_what_a_confined_principal_may_never_do(db: Database, kind: Kind) -> None:
    user, _ = await users.create(db, name=f"confined-{kind}-{uuid.uuid4().hex[:8]}")
    fam = await conversations.create(db, principal=user, title="its family")
    session = SESSION if kind is Kind.PARTICIPANT else None
    confined = Principal(user.id, user.name, kind=kind, family=fam.thread_id, session=session)
    rule.permit(confined, Deed.LIST)
    # A link may export what it reads and code (a commenter's link); a participant has
    # a study session of its own.
    allowed = {Deed.EXPORT, Deed.CODE} if kind is Kind.LINK else {Deed.SESSION}
    for deed in allowed:
        rule.permit(confined, deed)
    for deed in set(Deed) - {Deed.LIST, Deed.SESSION, *allowed}:
        with pytest.raises(Forbidden):
            rule.permit(confined, deed)
        rule.permit(user, deed)  # a user may
    with pytest.raises(Forbidden):
        rule.permit(user, Deed.SESSION)  # but has no study session
    if kind is Kind.LINK:
        with pytest.raises(Forbidden):
            rule.permit(confined, Deed.SESSION)
    with pytest.raises(Forbidden):
        await conversations.create(db, principal=confined, title="a new one")
    assert [c.thread_id for c in await conversations.list_for_user(db, principal=user)] == [
        fam.thread_id
    ]


def test_only_a_user_reaches_no_particular_family() -> None:
    with pytest.raises(ValueError, match="exactly one family"):
        Principal(1, "p", kind=Kind.PARTICIPANT)
    with pytest.raises(ValueError, match="exactly one family"):
        Principal(1, "u", family="th_x")
    with pytest.raises(ValueError, match="study session"):
        Principal(1, "p", kind=Kind.PARTICIPANT, family="th_x")
    with pytest.raises(ValueError, match="study session"):
        Principal(1, "l", kind=Kind.LINK, family="th_x", session=SESSION)
