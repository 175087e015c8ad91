"""Token mode: profiles and jobs need a token (401) and are their owner's (403 for
another user, never listed for them). On SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.services.access import users
from tests.helpers import db_of
from tests.whatif_helpers import wait_job


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_profiles_and_jobs_are_their_owners(app: FastAPI, client: httpx.AsyncClient) -> None:
    _, token_a = await users.create(db_of(app), name=f"a-{uuid.uuid4().hex[:8]}")
    _, token_b = await users.create(db_of(app), name=f"b-{uuid.uuid4().hex[:8]}")
    a, b = {"Authorization": f"Bearer {token_a}"}, {"Authorization": f"Bearer {token_b}"}
    for method, path in [
        ("GET", "/api/profiles"),
        ("POST", "/api/profiles"),
        ("GET", "/api/profiles/pr_x"),
        ("PATCH", "/api/profiles/pr_x"),
        ("DELETE", "/api/profiles/pr_x"),
        ("GET", "/api/jobs/job_x"),
        ("POST", "/api/jobs/job_x/cancel"),
    ]:
        r = await client.request(method, path, json={"name": "x"} if method != "GET" else None)
        assert r.status_code == 401, (method, path)

    r = await client.post("/api/profiles", json={"name": "mine", "provider": "offline"}, headers=a)
    pid = r.json()["id"]
    assert [p["id"] for p in (await client.get("/api/profiles", headers=b)).json()] == ["default"]
    assert (await client.get(f"/api/profiles/{pid}", headers=b)).status_code == 403
    assert (await client.delete(f"/api/profiles/{pid}", headers=b)).status_code == 403

    tid = (await client.post("/api/conversations", json={}, headers=a)).json()["thread_id"]
    r = await client.post(f"/api/conversations/{tid}/turns", json={"content": "todo: x"}, headers=a)
    assert r.status_code == 200
    # B may not replay A's family, nor with A's profile on B's own family
    body = {"from_node": f"{tid}:1", "to_node": f"{tid}:1", "profile_id": "default"}
    assert (
        await client.post(f"/api/conversations/{tid}/replay", json=body, headers=b)
    ).status_code == 403
    own = (await client.post("/api/conversations", json={}, headers=b)).json()["thread_id"]
    r = await client.patch(f"/api/conversations/{own}", json={"profile_id": pid}, headers=b)
    assert r.status_code == 403

    r = await client.post(f"/api/conversations/{tid}/replay", json=body, headers=a)
    assert r.status_code == 202
    job_id = r.json()["id"]
    client.headers.update(a)
    await wait_job(client, job_id)
    client.headers.pop("Authorization")
    assert (await client.get(f"/api/jobs/{job_id}", headers=b)).status_code == 404
    assert (await client.post(f"/api/jobs/{job_id}/cancel", headers=b)).status_code == 404
    assert (await client.get(f"/api/conversations/{tid}/jobs", headers=b)).status_code == 403
    assert (await client.get(f"/api/jobs/{job_id}", headers=a)).json()["state"] == "done"
