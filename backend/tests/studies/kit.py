"""Helpers for the studies tests: an owner with a study made through the API, and
participants joining it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.db.models import Conversation, User
from haico.db.models_studies import StudyParticipant
from haico.services.access.principal import Principal
from tests.helpers import db_of
from tests.share_helpers import bearer, new_user

TASK: dict[str, Any] = {
    "objective": "plan a picnic",
    "document": {"title": "Plan", "content": "Bring food."},
    "preferences": ["vegetarian", "near water"],
    "todos": ["pick a date"],
}
LINEAR = {"graph": False, "branching": False, "merge": False, "whatif": False}


@dataclass
class Owner:
    user: Principal
    h: dict[str, str]


@dataclass
class Joined:
    participant: str
    condition: dict[str, str]
    thread_id: str
    token: str

    @property
    def h(self) -> dict[str, str]:
        return bearer(self.token)


async def owner(app: FastAPI) -> Owner:
    user, h = await new_user(app, "res")
    return Owner(user, h)


async def make_study(
    client: httpx.AsyncClient,
    who: Owner,
    *,
    conditions: list[dict[str, Any]] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "Picnic study",
        "task": TASK,
        "conditions": conditions or [{"name": "branching"}, {"name": "linear", "features": LINEAR}],
        **extra,
    }
    r = await client.post("/api/studies", json=body, headers=who.h)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def join(client: httpx.AsyncClient, study: dict[str, Any]) -> Joined:
    r = await client.post("/api/studies/join", json={"token": study["join_token"]})
    assert r.status_code == 201, r.text
    return Joined(**r.json())


async def send(
    client: httpx.AsyncClient, thread_id: str, content: str, h: dict[str, str]
) -> httpx.Response:
    """POST a turn and read its stream to the end."""
    return await client.post(
        f"/api/conversations/{thread_id}/turns", json={"content": content}, headers=h
    )


async def row_counts(app: FastAPI) -> tuple[int, int, int]:
    """Users, families and participants in the store (what a failed join must not add)."""
    async with db_of(app).read() as s:
        users = await s.scalar(select(func.count()).select_from(User))
        convs = await s.scalar(select(func.count()).select_from(Conversation))
        parts = await s.scalar(select(func.count()).select_from(StudyParticipant))
    return int(users or 0), int(convs or 0), int(parts or 0)
