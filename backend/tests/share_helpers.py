"""Helpers for the sharing tests: users, a family to share, and shares made through the
public API."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import update

from haico.db.models import Share
from haico.services.access import users
from haico.services.access.principal import Principal
from tests.helpers import Seeded, db_of, seed_conversation


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def new_user(app: FastAPI, prefix: str) -> tuple[Principal, dict[str, str]]:
    user, token = await users.create(db_of(app), name=f"{prefix}-{uuid.uuid4().hex[:8]}")
    return user, bearer(token)


@dataclass
class Family:
    owner: Principal
    owner_h: dict[str, str]
    seeded: Seeded

    @property
    def tid(self) -> str:
        return self.seeded.thread_id


async def new_family(app: FastAPI) -> Family:
    owner, owner_h = await new_user(app, "own")
    return Family(owner, owner_h, await seed_conversation(app, owner))


async def share(
    client: httpx.AsyncClient, fam: Family, role: str, *, user: str | None = None, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, **extra}
    if user is not None:
        body["user"] = user
    r = await client.post(f"/api/conversations/{fam.tid}/shares", json=body, headers=fam.owner_h)
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def grantee(
    app: FastAPI, client: httpx.AsyncClient, fam: Family, role: str
) -> dict[str, str]:
    """Headers of a caller holding `role` on the family: a named user (`viewer`,
    `commenter`, `editor`) or a link (`link-viewer`, `link-commenter`)."""
    if role.startswith("link-"):
        made = await share(client, fam, role.removeprefix("link-"))
        return bearer(made["token"])
    user, headers = await new_user(app, role[:3])
    await share(client, fam, role, user=user.name)
    return headers


async def turn(
    client: httpx.AsyncClient, thread_id: str, content: str, headers: dict[str, str]
) -> int:
    """POST a turn as the caller `headers` name and read it to the end; its status."""
    r = await client.post(
        f"/api/conversations/{thread_id}/turns", json={"content": content}, headers=headers
    )
    return r.status_code


def soon() -> str:
    """An `expires_at` an hour from now."""
    return (datetime.now(UTC) + timedelta(hours=1)).isoformat()


async def expire(app: FastAPI, share_id: str) -> None:
    """The share's time has come (set in the row rather than waited for)."""
    async with db_of(app).transaction() as s:
        past = datetime.now(UTC) - timedelta(seconds=1)
        await s.execute(update(Share).where(Share.uid == share_id).values(expires_at=past))
