"""Revealing codings on both databases: on a study's family the study's owner reveals
for the whole study through the family (`PATCH …{reveal_codings}`), nobody else may;
the family read alone names its study and answers the study's flag; every reveal is
announced on the family's event stream (`haico/threadChanged` `revealed`), and a
reveal whose announcement cannot be written changes nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.coding.helpers import API, code, family, ok, send
from tests.coding.test_blind_streams import Watch, sse
from tests.history_helpers import live_server
from tests.share_helpers import bearer, new_user


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def _study(app: FastAPI, client: httpx.AsyncClient) -> dict[str, Any]:
    """A study with a codebook, one coder, and two participants who each sent a step."""
    _, oh = await new_user(app, "own")
    book = await ok(
        await client.post(
            "/api/codebooks", json={"name": "codes", "codes": [{"name": "x"}]}, headers=oh
        ),
        201,
    )
    study = await ok(
        await client.post(
            "/api/studies",
            json={
                "name": "Trips",
                "task": {"objective": "plan"},
                "conditions": [{"name": "tree"}],
                "codebook_id": book["id"],
            },
            headers=oh,
        ),
        201,
    )
    coder, ch = await new_user(app, "cod")
    r = await client.post(
        f"/api/studies/{study['id']}/members",
        json={"user": coder.name, "role": "coder"},
        headers=oh,
    )
    await ok(r, 201)
    joined = []
    for text in ("first idea", "second idea"):
        j = await ok(
            await client.post("/api/studies/join", json={"token": study["join_token"]}), 201
        )
        await send(client, j["thread_id"], text, bearer(j["token"]))
        joined.append(j)
    return {
        "id": study["id"],
        "owner": oh,
        "coder": ch,
        "code": book["codes"][0]["id"],
        "families": [j["thread_id"] for j in joined],
        "participant": bearer(joined[0]["token"]),
    }


def revealed(watch: Watch) -> list[bool]:
    return [
        bool(a.get("reveal"))
        for a in watch.actions
        if a.get("type") == "haico/threadChanged" and a.get("change") == "revealed"
    ]


async def test_the_study_owner_reveals_a_study_family_for_the_whole_study(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    st = await _study(app, client)
    p1, p2 = st["families"]
    oh, ch = st["owner"], st["coder"]
    await code(client, p1, 1, st["code"], oh)
    await code(client, p2, 1, st["code"], oh)

    async def seen(tid: str) -> int:
        return len(await ok(await client.get(f"{API}/{tid}/codings", headers=ch)))

    got = await ok(await client.get(f"{API}/{p1}", headers=ch))
    assert got["study"] == {"id": st["id"], "name": "Trips", "role": "coder"}
    assert got["reveal_codings"] is False and await seen(p1) == 0
    # neither a coder nor the participant (whose family it is) reveals a study's codings
    for h in (ch, st["participant"]):
        r = await client.patch(f"{API}/{p1}", json={"reveal_codings": True}, headers=h)
        assert r.status_code == 403, r.text
    out = await ok(await client.patch(f"{API}/{p1}", json={"reveal_codings": True}, headers=oh))
    assert out["reveal_codings"] is True and out["study"]["role"] == "owner"
    # the study's flag: every family of the study, the study's own answer too
    assert (await ok(await client.get(f"/api/studies/{st['id']}", headers=oh)))["reveal"] is True
    assert await seen(p1) == 1 and await seen(p2) == 1
    assert (await ok(await client.get(f"{API}/{p2}", headers=ch)))["reveal_codings"] is True
    await ok(await client.patch(f"{API}/{p2}", json={"reveal_codings": False}, headers=oh))
    assert await seen(p1) == 0
    # a participant reads its own family without its study
    mine = await ok(await client.get(f"{API}/{p1}", headers=st["participant"]))
    assert mine["study"] is None


async def test_a_reveal_is_announced_on_the_familys_stream(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=("commenter",))
    _, ch = s.coders["commenter0"]
    st = await _study(app, client)
    p1 = st["families"][0]
    async with (
        live_server(app) as base,
        sse(base, f"{API}/{s.tid}/events", ch) as coder,
        sse(base, f"{API}/{p1}/events", st["coder"]) as study_coder,
    ):
        for flag in (True, False):
            r = await client.patch(
                f"{API}/{s.tid}", json={"reveal_codings": flag}, headers=s.owner_h
            )
            await ok(r)
        await ok(
            await client.patch(
                f"/api/studies/{st['id']}", json={"reveal": True}, headers=st["owner"]
            )
        )
        await coder.until_action(lambda w: revealed(w) == [True, False])
        await study_coder.until_action(lambda w: revealed(w) == [True])


async def test_a_reveal_whose_announcement_fails_changes_nothing(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haico.services.studies import revealing as service

    s = await family(app, client, coders=("commenter",))
    _, ch = s.coders["commenter0"]
    await code(client, s.tid, 1, s.code("planning"), s.owner_h)

    async def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("the log is away")

    monkeypatch.setattr(service.action_log, "append_rows", broken)
    r = await client.patch(f"{API}/{s.tid}", json={"reveal_codings": True}, headers=s.owner_h)
    assert r.status_code == 500
    monkeypatch.undo()
    assert (await ok(await client.get(f"{API}/{s.tid}", headers=ch)))["reveal_codings"] is False
    assert await ok(await client.get(f"{API}/{s.tid}/codings", headers=ch)) == []
