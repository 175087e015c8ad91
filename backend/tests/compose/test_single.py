"""docker-compose.yml as a user runs it: PostgreSQL and one app with token auth, built
from the repository's Dockerfile, reached through the published port."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx

from tests.ahp.wire import AhpClient
from tests.compose.conftest import Json, Stack, figure, wait_healthy
from tests.compose.streams import API, Turn, new_family


async def _family(c: httpx.AsyncClient, tid: str) -> Json:
    """What a user sees of a family: its graph, messages and workspace."""
    out: Json = {}
    for part in ("graph", "messages", "workspace"):
        r = await c.get(f"{API}/{tid}/{part}")
        assert r.status_code == 200, r.text
        out[part] = r.json()
    return out


def _stored(value: Any) -> Any:
    """`value` without the branch summaries: those are derived in the background a
    while after a turn (and again after a restart, from their durable job), so they
    may land between two reads; everything else is what the user stored."""
    if isinstance(value, dict):
        return {k: _stored(v) for k, v in value.items() if k != "summary"}
    if isinstance(value, list):
        return [_stored(v) for v in value]
    return value


async def _everything(stack: Stack, token: str) -> dict[str, Json]:
    async with httpx.AsyncClient(
        base_url=stack.url, headers={"Authorization": f"Bearer {token}"}, timeout=30
    ) as c:
        r = await c.get(API)
        assert r.status_code == 200, r.text
        return {t["thread_id"]: _stored(await _family(c, t["thread_id"])) for t in r.json()}


async def test_the_stack_serves_keeps_its_data_and_comes_back(single: Stack) -> None:
    """Up and healthy on PostgreSQL; the studio at `/`; 401 without a token; a user made
    with `docker compose exec app haico users create` streams two turns over REST/SSE
    and completes the AHP handshake; the families survive the app container being
    killed and started, and the whole stack going down and up again."""
    async with httpx.AsyncClient(base_url=single.url, timeout=30) as c:
        health = (await c.get("/api/health")).json()
        assert health == {"status": "ok", "database": "ok", "backend": "postgresql"}, health
        studio = await c.get("/")
        assert studio.status_code == 200 and "<html" in studio.text.lower()
        assert (await c.get(API)).status_code == 401
    # The database is UTF-8, as the official image makes it (a stand-in must not differ).
    assert single.sql("SHOW server_encoding") == ["UTF8"]

    out = single.compose("exec", "-T", "app", "haico", "users", "create", "alice")
    token = out.strip().splitlines()[-1]
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=single.url, headers=auth, timeout=30) as c:
        assert (await c.get(API)).status_code == 200
        tid = await new_family(c, "compose")
        for content in ("hello from compose", "and a second turn"):
            turn = Turn(headers=auth)
            await asyncio.wait_for(turn.run(single.url, tid, content), 60)
            assert turn.completed, turn.events[-1:]
            assert [n for _, n, _ in turn.events].count("token") >= 1
        r = await c.post(f"{API}/{tid}/todos", json={"text": "survive restarts"})
        assert r.status_code == 201, r.text
        other = await new_family(c, "second family")
        r = await c.put(f"{API}/{other}/objective", json={"text": "kept"})
        assert r.status_code == 200, r.text

    ahp = await AhpClient.open(single.url, token=token)
    try:
        hello = await ahp.initialize(["1.0.0"])
        assert hello["protocolVersion"] == "1.0.0", hello
    finally:
        await ahp.close()

    before = await _everything(single, token)
    assert len(before) == 2
    assert len(before[tid]["messages"]) >= 4

    single.compose("kill", "app")
    start = time.monotonic()
    single.compose("start", "app")
    await wait_healthy(single.url, within=120)
    figure("single app: kill + start until healthy", f"{time.monotonic() - start:.1f} s")
    assert await _everything(single, token) == before

    single.compose("down", "--timeout", "10")
    start = time.monotonic()
    single.up()
    figure("single app: down + up -d --wait (kept volumes)", f"{time.monotonic() - start:.1f} s")
    assert await _everything(single, token) == before
