"""Pairwise judgments of siblings through the REST API on both databases: siblings
share a parent (or are both root-level), anything else → 422 `not_siblings`;
listing is blind like codings."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.coding.helpers import API, family, ok


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_judging_siblings(app: FastAPI, client: httpx.AsyncClient) -> None:
    s = await family(app, client, coders=("commenter", "viewer"))
    (_, ch), (_, vh) = s.coders["commenter0"], s.coders["viewer1"]
    a, b = f"{s.tid}:2", f"{s.sibling_tid}:2"
    body = {"a": a, "b": b, "preferred": "b", "criterion": "helpful", "rationale": "clearer"}
    made = await ok(await client.post(f"{API}/{s.tid}/judgments", json=body, headers=ch), 201)
    assert made["a"] == a and made["b"] == b and made["preferred"] == "b"
    assert made["criterion"] == "helpful" and made["rationale"] == "clearer"
    tie = await ok(
        await client.post(
            f"{API}/{s.sibling_tid}/judgments",
            json={"a": b, "b": a, "preferred": "tie"},
            headers=s.owner_h,
        ),
        201,
    )
    # a parent and its child, a node and a cousin, a node and itself: not siblings
    for x, y in ((f"{s.tid}:1", a), (f"{s.tid}:3", b), (a, a)):
        r = await client.post(
            f"{API}/{s.tid}/judgments", json={"a": x, "b": y, "preferred": "a"}, headers=ch
        )
        assert r.status_code == 422 and r.json()["code"] == "not_siblings", r.text
    # a node of no family of this one
    r = await client.post(
        f"{API}/{s.tid}/judgments",
        json={"a": f"th_{'0' * 32}:1", "b": a, "preferred": "a"},
        headers=ch,
    )
    assert r.status_code == 422
    # a viewer does not judge
    r = await client.post(f"{API}/{s.tid}/judgments", json=body, headers=vh)
    assert r.status_code == 403

    def ids(r: httpx.Response) -> list[int]:
        return [j["id"] for j in r.json()]

    assert ids(await client.get(f"{API}/{s.tid}/judgments", headers=ch)) == [made["id"]]
    assert ids(await client.get(f"{API}/{s.tid}/judgments", headers=s.owner_h)) == [
        made["id"],
        tie["id"],
    ]
    assert ids(await client.get(f"{API}/{s.tid}/judgments", headers=vh)) == []


async def test_root_level_nodes_are_siblings(app: FastAPI, client: httpx.AsyncClient) -> None:
    s = await family(app, client, coders=())
    at0 = await ok(
        await client.post(f"{API}/{s.tid}/branch", json={"from_turn": 0}, headers=s.owner_h), 201
    )
    r = await client.post(
        f"{API}/{at0['thread_id']}/turns", json={"content": "start over"}, headers=s.owner_h
    )
    assert r.status_code == 200
    body = {"a": f"{s.tid}:1", "b": f"{at0['thread_id']}:1", "preferred": "a"}
    await ok(await client.post(f"{API}/{s.tid}/judgments", json=body, headers=s.owner_h), 201)
