"""Joining by link: a pseudonym in join order, a family seeded from the task under the
condition with the fewest participants (ties in listed order, also under 60 joins at
once), nothing left behind by a join that fails, and no joining a closed study."""

from __future__ import annotations

import asyncio
from collections import Counter

import httpx
import pytest
from fastapi import FastAPI

from haico.services.studies import joining
from tests.studies.kit import TASK, join, make_study, owner, row_counts


async def test_join_seeds_a_family_from_the_task(app: FastAPI, client: httpx.AsyncClient) -> None:
    who = await owner(app)
    mine = await client.post(
        "/api/profiles", json={"name": "slow", "provider": "offline"}, headers=who.h
    )
    profile = mine.json()["id"]
    study = await make_study(
        client, who, conditions=[{"name": "a", "profile_id": profile}, {"name": "b"}]
    )
    p = await join(client, study)
    assert p.participant == "P001"
    assert p.condition == {"id": study["conditions"][0]["id"], "name": "a"}
    assert p.token.startswith("pt_") and p.thread_id.startswith("th_")
    ws = (await client.get(f"/api/conversations/{p.thread_id}/workspace", headers=p.h)).json()
    assert ws["objective"] == TASK["objective"]
    assert ws["document"] == TASK["document"]
    assert [x["text"] for x in ws["preferences"]] == TASK["preferences"]
    assert [x["text"] for x in ws["todos"]] == TASK["todos"]
    conv = (await client.get(f"/api/conversations/{p.thread_id}", headers=p.h)).json()
    assert conv["profile_id"] == profile  # the condition's profile, on the family's root
    assert conv["title"] == study["name"]
    # The second goes to the other condition, on the server's default model.
    q = await join(client, study)
    assert q.participant == "P002" and q.condition["name"] == "b"
    conv = (await client.get(f"/api/conversations/{q.thread_id}", headers=q.h)).json()
    assert conv["profile_id"] == "default"
    # Two families, each the participant's own; the study counts them.
    assert p.thread_id != q.thread_id
    got = (await client.get(f"/api/studies/{study['id']}", headers=who.h)).json()
    assert got["participants"] == 2


async def test_assignment_balances_with_ties_in_listed_order(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    who = await owner(app)
    study = await make_study(client, who, conditions=[{"name": "x"}, {"name": "y"}, {"name": "z"}])
    joined = [await join(client, study) for _ in range(7)]
    assert [j.participant for j in joined] == [f"P00{i}" for i in range(1, 8)]
    assert [j.condition["name"] for j in joined] == ["x", "y", "z", "x", "y", "z", "x"]


async def test_sixty_joins_at_once_are_numbered_and_balanced(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    who = await owner(app)
    study = await make_study(
        client, who, conditions=[{"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]
    )
    joined = await asyncio.gather(*(join(client, study) for _ in range(60)))
    assert sorted(j.participant for j in joined) == [f"P{i:03d}" for i in range(1, 61)]
    counts = Counter(j.condition["name"] for j in joined)
    assert counts == {"a": 15, "b": 15, "c": 15, "d": 15}
    assert len({j.thread_id for j in joined}) == 60
    assert len({j.token for j in joined}) == 60


async def test_a_closed_study_takes_no_one(app: FastAPI, client: httpx.AsyncClient) -> None:
    who = await owner(app)
    study = await make_study(client, who)
    early = await join(client, study)
    await client.patch(f"/api/studies/{study['id']}", json={"state": "closed"}, headers=who.h)
    r = await client.post("/api/studies/join", json={"token": study["join_token"]})
    assert r.status_code == 403 and r.json()["code"] == "study_closed"
    # Who joined before keeps working.
    turn = await client.post(
        f"/api/conversations/{early.thread_id}/turns", json={"content": "todo: go"}, headers=early.h
    )
    assert turn.status_code == 200, turn.text
    # Reopened, it takes the next participant.
    await client.patch(f"/api/studies/{study['id']}", json={"state": "open"}, headers=who.h)
    assert (await join(client, study)).participant == "P002"


async def test_an_unknown_link_joins_nothing(app: FastAPI, client: httpx.AsyncClient) -> None:
    for token in ("st_nothing", "pt_x", "", "st_" + "a" * 200):
        r = await client.post("/api/studies/join", json={"token": token})
        assert r.status_code in (404, 422), r.text
    r = await client.post("/api/studies/join", json={"token": "st_nothing"})
    assert r.status_code == 404 and r.json()["code"] == "not_found"


@pytest.mark.parametrize("where", ["seed", "participant"])
async def test_a_failed_join_leaves_nothing(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """The join is one transaction: a failure while the family is seeded, or after the
    family exists and before the participant row, leaves no user, family or participant,
    and the next join is still P001."""
    who = await owner(app)
    study = await make_study(client, who)
    before = await row_counts(app)

    async def broken_seed(*args: object, **kwargs: object) -> None:
        raise RuntimeError("injected")

    def broken_label(number: int) -> str:
        raise RuntimeError("injected")

    if where == "seed":
        monkeypatch.setattr(joining, "seed_workspaces", broken_seed)
    else:
        monkeypatch.setattr(joining.features, "label", broken_label)
    try:
        r = await client.post("/api/studies/join", json={"token": study["join_token"]})
        assert r.status_code == 500, r.text
    except RuntimeError:
        pass  # the transport may hand the app's exception through
    assert await row_counts(app) == before
    monkeypatch.undo()
    assert (await join(client, study)).participant == "P001"
