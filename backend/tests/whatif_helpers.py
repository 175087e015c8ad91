"""Helpers of the "what if" tests: profiles, turns with a profile, jobs."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.sse_client import parse_sse

API = "/api/conversations"


async def make_profile(client: httpx.AsyncClient, **body: Any) -> dict[str, Any]:
    r = await client.post("/api/profiles", json={"provider": "offline", **body})
    assert r.status_code == 201, r.text
    out: dict[str, Any] = r.json()
    return out


async def turn_with(
    client: httpx.AsyncClient, tid: str, content: str, profile_id: str | None = None
) -> list[tuple[str, Any]]:
    body: dict[str, Any] = {"content": content}
    if profile_id is not None:
        body["profile_id"] = profile_id
    r = await client.post(f"{API}/{tid}/turns", json=body)
    assert r.status_code == 200, r.text
    events = parse_sse(r.text)
    assert events[-1][0] == "turn_completed", events[-1]
    return events


async def node(client: httpx.AsyncClient, tid: str, k: int) -> dict[str, Any]:
    r = await client.get(f"{API}/{tid}/nodes/{k}")
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


async def wait_job(
    client: httpx.AsyncClient, job_id: str, states: tuple[str, ...] = ("done",)
) -> dict[str, Any]:
    """Poll the job until it reaches one of `states` (fails on another end state)."""
    deadline = asyncio.get_running_loop().time() + 60
    while True:
        r = await client.get(f"/api/jobs/{job_id}")
        assert r.status_code == 200, r.text
        job: dict[str, Any] = r.json()
        if job["state"] in states:
            return job
        assert job["state"] not in {"done", "failed", "cancelled"} - set(states), job
        assert asyncio.get_running_loop().time() < deadline, job
        await asyncio.sleep(0.05)
