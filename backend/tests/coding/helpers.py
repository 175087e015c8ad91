"""A shared family for the coding and dataset tests: an owner (token mode) with a
codebook, a family of three steps and a sibling of step 2, and coders holding a role
on it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI

from haico.services.access.principal import Principal
from tests.share_helpers import new_user, share

API = "/api/conversations"


@dataclass
class Setup:
    owner: Principal
    owner_h: dict[str, str]
    tid: str
    sibling_tid: str
    book: dict[str, Any]
    coders: dict[str, tuple[Principal, dict[str, str]]] = field(default_factory=dict)

    def code(self, name: str) -> int:
        return int(next(c["id"] for c in self.book["codes"] if c["name"] == name))


async def ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json() if r.content else None


async def send(client: httpx.AsyncClient, tid: str, content: str, h: dict[str, str]) -> None:
    r = await client.post(f"{API}/{tid}/turns", json={"content": content}, headers=h)
    assert r.status_code == 200, r.text


async def family(
    app: FastAPI, client: httpx.AsyncClient, *, coders: tuple[str, ...] = ("commenter",)
) -> Setup:
    """The owner's family `tid` (steps 1-3), a branch at 1 whose first step is step 2's
    sibling, the owner's codebook, and a user for each role in `coders`."""
    owner, h = await new_user(app, "own")
    tid = (await ok(await client.post(API, json={"title": "Study"}, headers=h), 201))["thread_id"]
    for text in ("objective: plan a trip", "Pick the ✈️ route, café first", "todo: book it"):
        await send(client, tid, text, h)
    sib = await ok(await client.post(f"{API}/{tid}/branch", json={"from_turn": 1}, headers=h), 201)
    sibling_tid = sib["thread_id"]
    await send(client, sibling_tid, "Take the train instead", h)
    body = {
        "name": "Trip codes",
        "codes": [
            {"name": "planning", "description": "the user plans", "color": "#112233"},
            {"name": "pushback", "parent": "planning"},
            {"name": "delegation"},
        ],
    }
    book = await ok(await client.post("/api/codebooks", json=body, headers=h), 201)
    setup = Setup(owner, h, tid, sibling_tid, book)
    for i, role in enumerate(coders):
        user, uh = await new_user(app, f"c{i}")
        await share(client, _Fam(owner, h, tid), role, user=user.name)
        setup.coders[f"{role}{i}"] = (user, uh)
    return setup


@dataclass
class _Fam:
    owner: Principal
    owner_h: dict[str, str]
    tid: str


async def code(
    client: httpx.AsyncClient,
    tid: str,
    k: int,
    code_id: int,
    h: dict[str, str],
    *,
    span: dict[str, Any] | None = None,
    memo: str | None = None,
    status: int = 201,
) -> Any:
    body: dict[str, Any] = {"code_id": code_id}
    if span is not None:
        body["span"] = span
    if memo is not None:
        body["memo"] = memo
    r = await client.post(f"{API}/{tid}/nodes/{k}/codings", json=body, headers=h)
    return await ok(r, status)
