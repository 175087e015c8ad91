"""Codebooks through the REST API on both databases: codes with descriptions, colours
and parents; add, rename and retire (never delete); names unique; another user's
codebook answers 404; a family's readers read its owner's codebooks; the notes'
free-text codes are offered as codes to add."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.coding.helpers import API, family, ok
from tests.share_helpers import new_user


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_codebook_grows_by_add_rename_retire_and_never_loses_a_code(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    _, h = await new_user(app, "res")
    made = await ok(
        await client.post(
            "/api/codebooks",
            json={
                "name": "Closure",
                "codes": [
                    {"name": "closure", "description": "ends early", "color": "#aa0000"},
                    {"name": "premature", "parent": "closure"},
                ],
            },
            headers=h,
        ),
        201,
    )
    closure, premature = made["codes"]
    assert closure["description"] == "ends early" and closure["color"] == "#aa0000"
    assert premature["parent_id"] == closure["id"] and premature["retired"] is False

    patched = await ok(
        await client.patch(
            f"/api/codebooks/{made['id']}",
            json={
                "name": "Closure v2",
                "add": [{"name": "agent-led", "parent": closure["id"]}],
                "rename": [{"id": premature["id"], "name": "too early"}],
                "retire": [closure["id"]],
            },
            headers=h,
        )
    )
    assert patched["name"] == "Closure v2"
    by_name = {c["name"]: c for c in patched["codes"]}
    assert set(by_name) == {"closure", "too early", "agent-led"}  # nothing deleted
    assert by_name["closure"]["retired"] is True
    assert by_name["agent-led"]["parent_id"] == closure["id"]

    # a name the codebook holds (any case) → 422, and nothing of the PATCH is written
    r = await client.patch(
        f"/api/codebooks/{made['id']}",
        json={"name": "renamed", "add": [{"name": "AGENT-LED"}]},
        headers=h,
    )
    assert r.status_code == 422
    again = await ok(await client.get(f"/api/codebooks/{made['id']}", headers=h))
    assert again["name"] == "Closure v2" and len(again["codes"]) == 3
    listed = await ok(await client.get("/api/codebooks", headers=h))
    assert [b["id"] for b in listed] == [made["id"]]

    # another user's codebook is no codebook to a stranger
    _, other = await new_user(app, "oth")
    assert (await client.get(f"/api/codebooks/{made['id']}", headers=other)).status_code == 404
    r = await client.patch(f"/api/codebooks/{made['id']}", json={"name": "x"}, headers=other)
    assert r.status_code == 404
    assert await ok(await client.get("/api/codebooks", headers=other)) == []


async def test_a_reader_of_a_family_reads_its_owners_codebooks(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=("commenter",))
    _, ch = s.coders["commenter0"]
    books = await ok(await client.get("/api/codebooks", params={"thread_id": s.tid}, headers=ch))
    assert [b["id"] for b in books] == [s.book["id"]]
    assert books[0]["owner"] == s.owner.name
    one = await client.get(
        f"/api/codebooks/{s.book['id']}", params={"thread_id": s.tid}, headers=ch
    )
    assert (await ok(one))["codes"] == s.book["codes"]
    # without the family, the owner's codebook is not the commenter's
    assert (await client.get(f"/api/codebooks/{s.book['id']}", headers=ch)).status_code == 404
    _, stranger = await new_user(app, "str")
    r = await client.get("/api/codebooks", params={"thread_id": s.tid}, headers=stranger)
    assert r.status_code == 403


async def test_free_text_codes_of_notes_are_offered_until_a_codebook_holds_them(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=())
    for k, codes in ((1, ["planning", "Hesitation"]), (2, ["hesitation", "detour"])):
        r = await client.post(
            f"{API}/{s.tid}/nodes/{k}/notes", json={"text": "n", "codes": codes}, headers=s.owner_h
        )
        await ok(r, 201)
    offered = await ok(await client.get("/api/codebooks/suggestions", headers=s.owner_h))
    # "planning" is in the codebook already (the notes keep their free-text codes)
    assert offered == [
        {"code": "Hesitation", "count": 1},
        {"code": "detour", "count": 1},
        {"code": "hesitation", "count": 1},
    ]
    await ok(
        await client.patch(
            f"/api/codebooks/{s.book['id']}",
            json={"add": [{"name": "hesitation"}]},
            headers=s.owner_h,
        )
    )
    offered = await ok(await client.get("/api/codebooks/suggestions", headers=s.owner_h))
    assert offered == [{"code": "detour", "count": 1}]
    # the notes' own codes are unchanged
    codes = await ok(await client.get("/api/codes", headers=s.owner_h))
    assert {c["code"] for c in codes} == {"planning", "Hesitation", "hesitation", "detour"}
