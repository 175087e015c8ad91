"""A family's coding travels in its JSON export and back, on both databases: the
codebooks its codings use (codes, parents, retired ones), the codings (spans, memos)
and the judgments are recreated on the imported nodes as the importer's, with the
coder the document records kept as `imported_author` (a copy of the copy keeps it);
a coder exports only what they see; a document whose coding does not hold together
is refused, and a failed import leaves none of it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.db.faults import Step
from haico.db.models import Codebook, Coding, Judgment
from tests.coding.helpers import API, Setup, code, family, ok
from tests.helpers import armed_faults, db_of
from tests.share_helpers import new_user


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


@pytest.fixture
def faults(app: FastAPI) -> Iterator[dict[str, Any]]:
    with armed_faults(db_of(app), "step") as armed:
        yield armed


async def coded(app: FastAPI, client: httpx.AsyncClient) -> tuple[Setup, dict[str, Any]]:
    """The shared family with a coding of the commenter's (a span), one of the owner's
    (a whole step), a retired code and a judgment; and the owner's export of it."""
    s = await family(app, client)
    _, ch = s.coders["commenter0"]
    span = {"field": "user_message", "start": 9, "end": 14}
    await code(client, s.tid, 2, s.code("pushback"), ch, span=span, memo="why so")
    await code(client, s.tid, 1, s.code("planning"), s.owner_h)
    await ok(
        await client.patch(
            f"/api/codebooks/{s.book['id']}",
            json={"retire": [s.code("delegation")]},
            headers=s.owner_h,
        )
    )
    judged = {"a": f"{s.tid}:2", "b": f"{s.sibling_tid}:2", "preferred": "b", "criterion": "c"}
    await ok(await client.post(f"{API}/{s.tid}/judgments", json=judged, headers=ch), 201)
    doc = await ok(await client.get(f"{API}/{s.tid}/export", headers=s.owner_h))
    return s, doc


async def test_coding_round_trips_through_export_and_import(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s, doc = await coded(app, client)
    cuser, _ = s.coders["commenter0"]
    assert [c["code"] for c in doc["codings"]] == ["pushback", "planning"]
    importer, ih = await new_user(app, "imp")
    copy = (await ok(await client.post(f"{API}/import", json=doc, headers=ih), 201))["thread_id"]

    graph = await ok(await client.get(f"{API}/{copy}/graph", headers=ih))
    new_threads = {n["thread_id"] for n in graph["nodes"]}
    assert s.tid not in new_threads and copy in new_threads
    books = await ok(await client.get("/api/codebooks", headers=ih))
    assert [b["name"] for b in books] == ["Trip codes"]
    codes = {c["name"]: c for c in books[0]["codes"]}
    assert codes["pushback"]["parent_id"] == codes["planning"]["id"]
    assert codes["delegation"]["retired"] and codes["planning"]["color"] == "#112233"
    codings = await ok(await client.get(f"{API}/{copy}/codings", headers=ih))
    assert [
        (c["node_id"], c["code_id"], c["span"], c["memo"], c["coder"], c["imported_author"])
        for c in codings
    ] == [
        (
            f"{copy}:2",
            codes["pushback"]["id"],
            {"field": "user_message", "start": 9, "end": 14},
            "why so",
            importer.name,
            cuser.name,
        ),
        (f"{copy}:1", codes["planning"]["id"], None, "", importer.name, s.owner.name),
    ]
    judgments = await ok(await client.get(f"{API}/{copy}/judgments", headers=ih))
    (j,) = judgments
    assert j["a"] == f"{copy}:2" and j["b"].endswith(":2") and j["b"].split(":")[0] in new_threads
    assert (j["preferred"], j["judge"], j["imported_author"]) == ("b", importer.name, cuser.name)

    # the copy's agreement is among the coders the document names
    agreement = await ok(await client.get(f"{API}/{copy}/agreement", headers=ih))
    assert agreement["coders"] == sorted([cuser.name, s.owner.name])

    # a copy of the copy still names the first coders
    again = await ok(await client.get(f"{API}/{copy}/export", headers=ih))
    _, kh = await new_user(app, "kim")
    third = (await ok(await client.post(f"{API}/import", json=again, headers=kh), 201))["thread_id"]
    listed = await ok(await client.get(f"{API}/{third}/codings", headers=kh))
    assert [c["imported_author"] for c in listed] == [cuser.name, s.owner.name]


async def test_a_coder_exports_only_what_they_see(app: FastAPI, client: httpx.AsyncClient) -> None:
    s, _ = await coded(app, client)
    cuser, ch = s.coders["commenter0"]
    doc = await ok(await client.get(f"{API}/{s.tid}/export", headers=ch))
    assert [c["coder"] for c in doc["codings"]] == [cuser.name]
    assert [b["name"] for b in doc["codebooks"]] == ["Trip codes"]


async def _rows(app: FastAPI) -> tuple[int, int, int]:
    async with db_of(app).read() as s:
        return (
            int(await s.scalar(select(func.count()).select_from(Codebook)) or 0),
            int(await s.scalar(select(func.count()).select_from(Coding)) or 0),
            int(await s.scalar(select(func.count()).select_from(Judgment)) or 0),
        )


async def test_a_broken_or_failed_import_keeps_no_coding(
    app: FastAPI, client: httpx.AsyncClient, faults: dict[str, Any]
) -> None:
    s, doc = await coded(app, client)
    _, ih = await new_user(app, "imp")
    before = await _rows(app)

    def broken(change: Any) -> dict[str, Any]:
        copy = json.loads(json.dumps(doc))
        change(copy)
        return copy

    for bad in (
        broken(lambda d: d["codings"][0].update(node_id=f"{s.tid}:9")),
        broken(lambda d: d["codings"][0].update(code="nothing")),
        broken(lambda d: d["codings"][0].update(codebook="elsewhere")),
        broken(lambda d: d["codings"][0]["span"].update(end=999)),
        broken(lambda d: d["codebooks"][0]["codes"].reverse()),  # a child before its parent
        broken(lambda d: d["judgments"][0].update(b=d["judgments"][0]["a"])),
    ):
        r = await client.post(f"{API}/import", json=bad, headers=ih)
        assert r.status_code == 422, r.text
    for step in (Step.IMPORT_ROWS, Step.IMPORT_SEED, Step.IMPORT_ACTIVATE):
        faults["step"] = step
        r = await client.post(f"{API}/import", json=doc, headers=ih)
        assert r.status_code == 502, (step, r.text)
    faults["step"] = None
    assert await _rows(app) == before
    await ok(await client.post(f"{API}/import", json=doc, headers=ih), 201)
    assert await _rows(app) == (before[0] + 1, before[1] + 2, before[2] + 1)
