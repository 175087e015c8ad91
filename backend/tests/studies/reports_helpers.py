"""Helpers of the study reading tests: a study built by hand (rows written directly,
so the reading side is tested apart from joining), a client per caller, and the
participants' families worked through the public API."""

from __future__ import annotations

import contextlib
import hashlib
import secrets
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import httpx
from fastapi import FastAPI

from haico.db.models import Study, StudyCondition, StudyMember, StudyParticipant
from haico.events import log as action_log
from haico.services.access import users
from haico.services.access.principal import Principal
from haico.services.studies import study_events
from haico.services.studies.features import label as pseudonym
from tests.helpers import db_of
from tests.share_helpers import bearer

API = "/api/conversations"


@contextlib.asynccontextmanager
async def as_caller(app: FastAPI, headers: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport, base_url="http://haico.test", headers=headers
    ) as c:
        yield c


@dataclass
class Person:
    """A participant built by hand: its user, token, family and place."""

    user: Principal
    headers: dict[str, str]
    thread_id: str
    number: int

    @property
    def name(self) -> str:
        return pseudonym(self.number)


@dataclass
class HandStudy:
    id: str
    owner: Principal
    owner_h: dict[str, str]
    conditions: dict[str, str]  # name → id
    people: list[Person] = field(default_factory=list)
    tokens: list[str] = field(default_factory=list)


async def new_study(app: FastAPI, *conditions: str) -> HandStudy:
    db = db_of(app)
    owner, token = await users.create(db, name=f"owner-{uuid.uuid4().hex[:8]}")
    study_id = f"sy_{uuid.uuid4().hex[:24]}"
    join = f"st_{secrets.token_urlsafe(16)}"
    ids = {name: f"sc_{uuid.uuid4().hex[:24]}" for name in conditions}
    async with db.transaction() as s:
        s.add(Study(id=study_id, owner_id=owner.id, name="hand-built", join_token=join))
        await s.flush()
        for i, name in enumerate(conditions):
            s.add(StudyCondition(id=ids[name], study_id=study_id, position=i, name=name))
    return HandStudy(study_id, owner, bearer(token), ids, tokens=[token, join])


async def add_member(app: FastAPI, study: HandStudy, role: str) -> dict[str, str]:
    user, token = await users.create(db_of(app), name=f"{role}-{uuid.uuid4().hex[:8]}")
    async with db_of(app).transaction() as s:
        s.add(StudyMember(study_id=study.id, user_id=user.id, role=role))
    return bearer(token)


async def add_person(
    app: FastAPI,
    client: httpx.AsyncClient,
    study: HandStudy,
    condition: str,
    *,
    state: str = "joined",
    joined_at: datetime | None = None,
    consented_at: datetime | None = None,
    finished_at: datetime | None = None,
) -> Person:
    """A participant with a family of its own (made through the API as its user),
    logged as joined on the study's channel."""
    db = db_of(app)
    user, token = await users.create(db, name=f"person-{uuid.uuid4().hex[:8]}")
    r = await client.post(f"{API}", json={"title": "task"}, headers=bearer(token))
    assert r.status_code == 201, r.text
    root = str(r.json()["thread_id"])
    number = len(study.people) + 1
    extra: dict[str, Any] = {"joined_at": joined_at} if joined_at is not None else {}
    pt = f"pt_{secrets.token_urlsafe(16)}"
    async with db.transaction() as s:
        s.add(
            StudyParticipant(
                id=f"sp_{uuid.uuid4().hex[:24]}",
                study_id=study.id,
                number=number,
                condition_id=study.conditions[condition],
                user_id=user.id,
                thread_id=root,
                token_hash=hashlib.sha256(pt.encode()).hexdigest(),
                state=state,
                consented_at=consented_at,
                finished_at=finished_at,
                **extra,
            )
        )
        joined = study_events.joined_row(
            study_id=study.id, participant=pseudonym(number), condition=condition, thread_id=root
        )
        await action_log.append_rows(s, [joined])
    person = Person(user, bearer(token), root, number)
    study.people.append(person)
    study.tokens += [token, pt]
    return person


async def turn(client: httpx.AsyncClient, person: Person, content: str, tid: str = "") -> None:
    r = await client.post(
        f"{API}/{tid or person.thread_id}/turns", json={"content": content}, headers=person.headers
    )
    assert r.status_code == 200, r.text
    assert "turn_completed" in r.text, r.text


async def checkout(client: httpx.AsyncClient, person: Person, turn_id: str | None) -> None:
    r = await client.post(
        f"{API}/{person.thread_id}/checkout", json={"turn_id": turn_id}, headers=person.headers
    )
    assert r.status_code == 200, r.text


async def working_thread(client: httpx.AsyncClient, person: Person) -> str:
    r = await client.get(f"{API}/{person.thread_id}/history", headers=person.headers)
    assert r.status_code == 200, r.text
    return str(r.json()["working_thread_id"])
