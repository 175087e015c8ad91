"""A study's coding on both databases: its coders code its participants' families
with the study's codebook (its viewers do not), blind until the study's owner
reveals, the study's agreement over every family, and the study's exports (a Case
per participant with its condition in the `.qdpx`; participant and condition on every
JSONL line and Parquet row)."""

from __future__ import annotations

import io
import json
import zipfile
from typing import Any

import httpx
import pyarrow.parquet as pq
import pytest
from fastapi import FastAPI
from lxml import etree

from haico.services.datasets import qdpx
from tests.coding.helpers import API, code, ok, send
from tests.share_helpers import bearer, new_user

Q = {"q": qdpx.NS}


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_a_studys_coders_code_blind_then_agree_and_export(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    _, oh = await new_user(app, "own")
    book = await ok(
        await client.post(
            "/api/codebooks",
            json={"name": "study codes", "codes": [{"name": "clarify"}, {"name": "accept"}]},
            headers=oh,
        ),
        201,
    )
    other = await ok(
        await client.post(
            "/api/codebooks", json={"name": "private", "codes": [{"name": "x"}]}, headers=oh
        ),
        201,
    )
    clarify, accept = (c["id"] for c in book["codes"])
    study = await ok(
        await client.post(
            "/api/studies",
            json={
                "name": "Trips",
                "task": {"objective": "plan"},
                "conditions": [{"name": "tree"}, {"name": "linear"}],
                "codebook_id": book["id"],
            },
            headers=oh,
        ),
        201,
    )
    assert study["codebook_id"] == book["id"]
    sid = study["id"]
    people: dict[str, tuple[Any, dict[str, str]]] = {}
    for name, role in (("a", "coder"), ("b", "coder"), ("v", "viewer")):
        user, h = await new_user(app, name)
        people[name] = (user, h)
        r = await client.post(
            f"/api/studies/{sid}/members", json={"user": user.name, "role": role}, headers=oh
        )
        await ok(r, 201)
    (a, ah), (b, bh), (_, vh) = people["a"], people["b"], people["v"]
    joined = []
    for text in ("first idea", "second idea"):
        j = await ok(
            await client.post("/api/studies/join", json={"token": study["join_token"]}), 201
        )
        await send(client, j["thread_id"], text, bearer(j["token"]))
        await send(client, j["thread_id"], "and more", bearer(j["token"]))
        joined.append(j)
    p1, p2 = joined[0]["thread_id"], joined[1]["thread_id"]

    # the coder reads the study's codebook through the family
    books = await ok(await client.get("/api/codebooks", params={"thread_id": p1}, headers=ah))
    assert [x["id"] for x in books] == [book["id"]]
    # coders code with the study's codes; a viewer does not code; other codes → 422
    await code(client, p1, 1, clarify, ah)
    await code(client, p1, 1, clarify, bh)
    await code(client, p1, 2, accept, ah)
    await code(client, p1, 2, clarify, bh)
    await code(client, p2, 1, accept, ah)
    await code(client, p2, 1, accept, bh)
    await code(client, p2, 2, accept, vh, status=403)
    await code(client, p2, 2, other["codes"][0]["id"], ah, status=422)
    pt = bearer(joined[0]["token"])
    await code(client, p1, 1, clarify, pt, status=403)  # a participant is no coder

    async def coders_seen(tid: str, h: dict[str, str]) -> set[str]:
        return {c["coder"] for c in await ok(await client.get(f"{API}/{tid}/codings", headers=h))}

    assert await coders_seen(p1, ah) == {a.name}
    assert await coders_seen(p1, oh) == {a.name, b.name}  # the study's owner sees all
    url = f"/api/studies/{sid}/agreement"
    assert (await client.get(url, headers=ah)).status_code == 403
    out = await ok(await client.get(url, headers=oh))
    # units: the 3 nodes both coded; clarify: a=[1,0,0] b=[1,1,0]; accept: a=[0,1,1] b=[0,0,1]
    assert out["coders"] == sorted([a.name, b.name]) and out["units"] == 3
    per = {c["name"]: c for c in out["codes"]}
    assert per["clarify"]["percent_agreement"] == pytest.approx(2 / 3, abs=1e-6)
    assert out["overall"]["percent_agreement"] == pytest.approx(4 / 6, abs=1e-6)

    await ok(await client.patch(f"/api/studies/{sid}", json={"reveal": True}, headers=oh))
    assert await coders_seen(p1, ah) == {a.name, b.name}
    assert (await ok(await client.get(url, headers=ah)))["units"] == 3

    # the study's exports
    r = await client.get(f"/api/studies/{sid}/export.qdpx", headers=ah)
    assert r.status_code == 200
    with zipfile.ZipFile(io.BytesIO(r.content)) as z:
        doc = etree.fromstring(z.read("project.qde"))
    qdpx.schema().assertValid(doc)
    cases = {
        c.get("name"): c.findtext("q:VariableValue/q:TextValue", namespaces=Q)
        for c in doc.iterfind("q:Cases/q:Case", Q)
    }
    assert cases == {"P001": "tree", "P002": "linear"}
    assert doc.find("q:Variables/q:Variable[@name='condition']", Q) is not None
    assert len(doc.findall(".//q:PlainTextSelection", Q)) == 6
    lines = [
        json.loads(x)
        for x in (
            await client.get(f"/api/studies/{sid}/export.jsonl", headers=oh)
        ).text.splitlines()
    ]
    assert {(m["participant"], m["condition"]) for m in lines} == {
        ("P001", "tree"),
        ("P002", "linear"),
    }
    assert len(lines) == 8
    table = pq.read_table(
        io.BytesIO((await client.get(f"/api/studies/{sid}/export.parquet", headers=oh)).content)
    )
    assert table.schema.names[:3] == ["participant", "condition", "node_id"]
    assert sorted(set(table.column("participant").to_pylist())) == ["P001", "P002"]
    # a participant has no study export; a stranger no study
    assert (await client.get(f"/api/studies/{sid}/export.qdpx", headers=pt)).status_code == 403
    _, sh = await new_user(app, "str")
    assert (await client.get(f"/api/studies/{sid}/export.qdpx", headers=sh)).status_code == 404
    assert (await client.get(url, headers=sh)).status_code == 404


async def test_a_study_names_only_a_codebook_of_its_owner(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The id `POST /api/codebooks` answers is what a study takes; another user's
    codebook, or none by that id, is refused and no study is made."""
    _, oh = await new_user(app, "own")
    _, eh = await new_user(app, "else")
    theirs = await ok(
        await client.post("/api/codebooks", json={"name": "theirs", "codes": []}, headers=eh),
        201,
    )
    body = {"name": "S", "conditions": [{"name": "only"}]}
    for wrong in (theirs["id"], theirs["id"] + 1000):
        r = await client.post("/api/studies", json={**body, "codebook_id": wrong}, headers=oh)
        assert r.status_code == 422, r.text
        assert r.json()["code"] == "invalid_input"
        assert "codebook_id" in r.json()["message"]
    assert (await ok(await client.get("/api/studies", headers=oh), 200)) == []
