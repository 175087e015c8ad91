"""Joining a study by its link, and the participant token that comes of it.

`join` needs no account: the link's token (`st_…`) is the whole credential. It makes a
participant's own user row (like a share link's: never listed, never given an API
token), a new family seeded from the study's task with the condition's profile on its
root, and the participant row with its token (`pt_…`, shown once, stored as a SHA-256
digest).

`join_batch` makes several joins of one study in one transaction (the serving process
gathers concurrent joins into batches: `join_queue`); `join` is a batch of one. The
study's row is locked first (on PostgreSQL; SQLite's writers queue for the write lock),
then read again: a study closed meanwhile takes no one. Under the lock the counts and
the last number are read once and each joiner in turn gets the condition with the
fewest participants (ties in the listed order) and the next pseudonym: `P001`, `P002`,
… in join order, no gap and no twice, across processes too. Every kind of row is then
written with one statement for the whole batch. Any failure rolls the whole batch back.

A `Joiner`'s ids (its token, user name and family id) are drawn before the batch, so
that the same joiner retried alone writes the same rows.

`authenticate` resolves a `pt_…` token to a PARTICIPANT principal that reaches that
family only; a participant of a closed study keeps working, a finished one reads.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Conversation
from haico.db.models_studies import Study, StudyCondition, StudyParticipant, new_participant_id
from haico.db.repositories import studies as repo
from haico.db.repositories import users as users_repo
from haico.domain import new_thread_id, now
from haico.errors import NotFound, StudyClosed, Unauthorized
from haico.events import log as action_log
from haico.schemas.studies import ConditionRef, JoinOut, Task
from haico.schemas.workspace import DocumentOut
from haico.services.access.principal import Kind, Principal, Session
from haico.services.access.users import hash_token
from haico.services.families.conversations import created_row, new_root
from haico.services.studies import features, study_events
from haico.services.workspace.snapshots import seed_workspaces
from haico.services.workspace.state import PreferenceState, TodoState, WorkspaceState, new_uid

PARTICIPANT_PREFIX = "pt_"
PARTICIPANT_USER_PREFIX = "participant:"
NO_LINK = "no study has this join link"


@dataclass(frozen=True)
class Joiner:
    """One join's own ids: the participant's token, its user's name, its family."""

    secret: str
    user_name: str
    thread_id: str

    @classmethod
    def new(cls) -> Joiner:
        return cls(
            secret=PARTICIPANT_PREFIX + secrets.token_urlsafe(32),
            user_name=PARTICIPANT_USER_PREFIX + secrets.token_hex(8),
            thread_id=new_thread_id(),
        )


@dataclass(frozen=True)
class _Seat:
    """Where a joiner sits: its number and condition."""

    joiner: Joiner
    number: int
    cond: StudyCondition


def assign(conditions: list[StudyCondition], counts: dict[str, int]) -> StudyCondition:
    """The condition with the fewest participants; ties go to the one listed first."""
    return min(conditions, key=lambda c: (counts.get(c.id, 0), c.position))


def seed_state(task: Task) -> WorkspaceState:
    """The workspace a participant's family starts from: the task, items with new uids."""
    doc = task.document
    return WorkspaceState(
        objective=task.objective,
        document=DocumentOut(title=doc.title, content=doc.content) if doc is not None else None,
        preferences=[PreferenceState(uid=new_uid(), text=p) for p in task.preferences],
        todos=[TodoState(uid=new_uid(), text=t) for t in task.todos],
    )


def _closed() -> StudyClosed:
    return StudyClosed("this study is closed: it takes no new participants")


async def join(db: Database, *, token: str) -> JoinOut:
    """Join the study whose link carries `token`, alone (see the module doc): unknown →
    404, closed → 403 `study_closed`."""
    (out,) = await join_batch(db, token=token, joiners=[Joiner.new()])
    return out


async def join_batch(db: Database, *, token: str, joiners: list[Joiner]) -> list[JoinOut]:
    """The joins of `joiners`, in their order, in one transaction (see the module doc);
    unknown → 404 and closed → 403 `study_closed` for all of them."""
    async with db.transaction() as s:
        study = await repo.by_join_token(s, token)  # locked
        if study is None:
            raise NotFound(NO_LINK)
        if study.state == "closed":
            raise _closed()
        seats = await _seat(s, study, joiners)
        await _write(s, study, seats)
        return [_answer(seat) for seat in seats]


async def _seat(s: AsyncSession, study: Study, joiners: list[Joiner]) -> list[_Seat]:
    """Numbers and conditions, in order, from the counts read once (under the lock)."""
    conditions = await repo.conditions(s, [study.id])
    counts = await repo.counts_by_condition(s, study.id)
    last = await repo.last_number(s, study.id)
    seats = []
    for k, joiner in enumerate(joiners, start=1):
        cond = assign(conditions, counts)
        counts[cond.id] = counts.get(cond.id, 0) + 1
        seats.append(_Seat(joiner, last + k, cond))
    return seats


async def _write(s: AsyncSession, study: Study, seats: list[_Seat]) -> None:
    """The batch's rows, each kind with one statement: users, families (root thread,
    workspace), participants, then the log (each family's `created`, then its join)."""
    users = await users_repo.add_links(s, [seat.joiner.user_name for seat in seats])
    task = Task.model_validate(study.task or {})
    families = [(_family(seat, users, study, task), seed_state(task)) for seat in seats]
    s.add_all([conv for conv, _ in families])
    await s.flush()
    await seed_workspaces(s, families)
    s.add_all([_participant(seat, users, study) for seat in seats])
    await s.flush()
    log: list[tuple[str | None, str, dict[str, Any]]] = []
    for seat in seats:
        log.append(created_row(seat.joiner.thread_id))
        log.append(
            study_events.joined_row(
                study_id=study.id,
                participant=features.label(seat.number),
                condition=seat.cond.name,
                thread_id=seat.joiner.thread_id,
            )
        )
    await action_log.append_rows(s, log)


def _family(seat: _Seat, users: dict[str, int], study: Study, task: Task) -> Conversation:
    """The participant's family's root, on its condition's profile."""
    conv = new_root(
        thread_id=seat.joiner.thread_id,
        user_id=users[seat.joiner.user_name],
        title=study.name,
        objective=task.objective,
    )
    conv.profile_id = seat.cond.profile_id
    return conv


def _participant(seat: _Seat, users: dict[str, int], study: Study) -> StudyParticipant:
    return StudyParticipant(
        id=new_participant_id(),
        study_id=study.id,
        number=seat.number,
        condition_id=seat.cond.id,
        user_id=users[seat.joiner.user_name],
        thread_id=seat.joiner.thread_id,
        token_hash=hash_token(seat.joiner.secret),
        state="joined",
        joined_at=now(),
    )


def _answer(seat: _Seat) -> JoinOut:
    return JoinOut(
        participant=features.label(seat.number),
        condition=ConditionRef(id=seat.cond.id, name=seat.cond.name),
        thread_id=seat.joiner.thread_id,
        token=seat.joiner.secret,
    )


async def authenticate(db: Database, *, token: str) -> Principal:
    """The participant a `pt_…` token names: unknown → 401."""
    async with db.read() as s:
        found = await repo.session_by_token_hash(s, hash_token(token))
    if found is None:
        raise Unauthorized("unknown token")
    participant, study, cond, user = found
    session = Session(
        participant_id=participant.id,
        study_id=study.id,
        condition_id=cond.id,
        features=features.turned_on(cond.features),
        profile_id=cond.profile_id,
    )
    return Principal(
        user.id, user.name, kind=Kind.PARTICIPANT, family=participant.thread_id, session=session
    )
