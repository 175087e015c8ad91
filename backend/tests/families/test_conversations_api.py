"""Conversations through the REST API, on both storage backends."""

from __future__ import annotations

import httpx


async def test_create_list_get_rename_delete(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/conversations", json={"title": "Essay", "objective": "Argue X"})
    assert r.status_code == 201, r.text
    conv = r.json()
    tid = conv["thread_id"]
    assert tid.startswith("th_") and len(tid) == 35
    assert conv["root_thread_id"] == tid
    assert conv["objective"] == "Argue X"
    assert conv["turn_index"] == 0 and conv["parent_thread_id"] is None
    assert conv["forked_from"] is None

    listed = (await client.get("/api/conversations")).json()
    assert [c["thread_id"] for c in listed] == [tid]

    r = await client.patch(f"/api/conversations/{tid}", json={"title": "Essay v2"})
    assert r.status_code == 200 and r.json()["title"] == "Essay v2"
    assert (await client.get(f"/api/conversations/{tid}")).json()["title"] == "Essay v2"

    assert (await client.delete(f"/api/conversations/{tid}")).status_code == 204
    assert (await client.get(f"/api/conversations/{tid}")).status_code == 404
    assert (await client.get("/api/conversations")).json() == []
    r = await client.delete(f"/api/conversations/{tid}")
    assert r.status_code == 404 and r.json()["code"] == "not_found"


async def test_default_title_and_unknown_thread(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/conversations", json={})
    assert r.status_code == 201 and r.json()["title"] == "New conversation"
    r = await client.get("/api/conversations/th_" + "0" * 32)
    assert r.status_code == 404
    assert r.json() == {"code": "not_found", "message": r.json()["message"]}


async def test_bad_input_names_the_field(client: httpx.AsyncClient) -> None:
    r = await client.post("/api/conversations", json={"title": 5})
    assert r.status_code == 422
    assert r.json()["code"] == "invalid_input" and "title" in r.json()["message"]
    r = await client.post("/api/conversations", json={"nope": 1})
    assert r.status_code == 422 and "nope" in r.json()["message"]


async def test_body_over_limit_is_413(client: httpx.AsyncClient) -> None:
    big = "x" * (1024 * 1024 + 10)
    r = await client.post("/api/conversations", json={"title": "t", "objective": big})
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large"
    # nothing was created
    assert (await client.get("/api/conversations")).json() == []


async def test_health_reports_database(client: httpx.AsyncClient, backend: str) -> None:
    r = await client.get("/api/health")
    assert r.status_code == 200
    assert r.json() == {
        "status": "ok",
        "database": "ok",
        "backend": "postgresql" if backend == "postgres" else "sqlite",
    }
