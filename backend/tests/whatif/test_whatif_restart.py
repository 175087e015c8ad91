"""A server killed mid-replay: on restart the job is `failed`, says why, and keeps
the branch it built (its finished steps complete, the interrupted one an `error`
node); the family goes on and a new replay runs. On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx

from tests.server import Server
from tests.sse_client import parse_sse

API = "/api/conversations"


async def _job(c: httpx.AsyncClient, job_id: str) -> dict[str, Any]:
    r = await c.get(f"/api/jobs/{job_id}")
    assert r.status_code == 200, r.text
    out: dict[str, Any] = r.json()
    return out


async def test_a_restart_mid_job_fails_it_and_keeps_what_it_built(
    server_env: dict[str, str],
) -> None:
    server = Server(server_env)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        tid = (await c.post(API, json={})).json()["thread_id"]
        r = await c.post(f"{API}/{tid}/turns", json={"content": "todo: one"})
        assert parse_sse(r.text)[-1][0] == "turn_completed"
        slow = asyncio.create_task(c.post(f"{API}/{tid}/turns", json={"content": "wait: 20"}))
        for _ in range(200):
            if (await c.get(f"{API}/{tid}/history")).json()["active_turn"]:
                break
            await asyncio.sleep(0.05)
        assert (await c.post(f"{API}/{tid}/turns/cancel")).status_code == 200
        await slow
        body = {"from_node": f"{tid}:1", "to_node": f"{tid}:2", "profile_id": "default"}
        r = await c.post(f"{API}/{tid}/replay", json=body)
        assert r.status_code == 202, r.text
        job_id = r.json()["id"]
        job = await _job(c, job_id)
        for _ in range(200):  # until the slow step runs
            job = await _job(c, job_id)
            if job["progress"]["done"] == 1:
                break
            await asyncio.sleep(0.05)
        assert job["progress"]["done"] == 1 and job["state"] == "running"
        await asyncio.sleep(0.3)
        server.kill()
    restarted = Server(server_env)
    await restarted.start()
    try:
        async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as c:
            job = await _job(c, job_id)
            assert job["state"] == "failed", job
            assert "restarted" in job["error"]
            assert job["progress"] == {"done": 1, "total": 2}
            (branch,) = job["thread_ids"]
            for _ in range(100):
                second = (await c.get(f"{API}/{branch}/nodes/2")).json()
                if second["state"] == "error":
                    break
                await asyncio.sleep(0.1)
            assert second["state"] == "error" and second["user_message"] == "wait: 20"
            assert (await c.get(f"{API}/{branch}/nodes/1")).json()["state"] == "complete"
            # cancelling a failed job changes nothing; a new replay runs
            r = await c.post(f"/api/jobs/{job_id}/cancel")
            assert r.json()["state"] == "failed"
            body = {"from_node": f"{tid}:1", "to_node": f"{tid}:1", "profile_id": "default"}
            r = await c.post(f"{API}/{tid}/replay", json=body)
            assert r.status_code == 202, r.text
            for _ in range(200):
                again = await _job(c, r.json()["id"])
                if again["state"] == "done":
                    break
                await asyncio.sleep(0.05)
            assert again["state"] == "done"
    finally:
        restarted.stop()


async def test_a_stopping_server_fails_its_jobs(settings: Any) -> None:
    """A graceful stop (SIGTERM: the app's lifespan ends) marks a running job failed
    at once, keeping its branch; the next start finds it so."""
    from haico.main import create_app

    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            tid = (await c.post(API, json={})).json()["thread_id"]
            r = await c.post(f"{API}/{tid}/turns", json={"content": "todo: one"})
            assert parse_sse(r.text)[-1][0] == "turn_completed"
            slow = asyncio.create_task(c.post(f"{API}/{tid}/turns", json={"content": "wait: 20"}))
            for _ in range(200):
                if (await c.get(f"{API}/{tid}/history")).json()["active_turn"]:
                    break
                await asyncio.sleep(0.02)
            assert (await c.post(f"{API}/{tid}/turns/cancel")).status_code == 200
            await slow
            body = {"from_node": f"{tid}:1", "to_node": f"{tid}:2", "profile_id": "default"}
            job_id = (await c.post(f"{API}/{tid}/replay", json=body)).json()["id"]
            for _ in range(200):
                if (await _job(c, job_id))["progress"]["done"] == 1:
                    break
                await asyncio.sleep(0.05)
    again = create_app(settings)
    async with again.router.lifespan_context(again):
        transport = httpx.ASGITransport(app=again)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            job = await _job(c, job_id)
            assert job["state"] == "failed" and "shut down" in job["error"], job
            assert job["progress"]["done"] == 1 and len(job["thread_ids"]) == 1
