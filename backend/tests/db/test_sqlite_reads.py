"""On SQLite, reads never take (or wait for) the write lock: a request that only
reads answers while another transaction holds the lock, and sees the last commit."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from tests.helpers import db_of

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


async def test_reads_answer_while_a_writer_holds_the_lock(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    db = db_of(app)
    tid = (await client.post("/api/conversations", json={"title": "before"})).json()["thread_id"]
    holding, release = asyncio.Event(), asyncio.Event()

    async def writer() -> None:
        async with db.transaction() as s:
            await s.execute(
                text("UPDATE conversations SET title = 'during' WHERE thread_id = :t"), {"t": tid}
            )
            holding.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await holding.wait()
    try:
        # The busy timeout is 10 s: a read that queued for the lock would take that long.
        async with asyncio.timeout(3):
            conv = await client.get(f"/api/conversations/{tid}")
            graph = await client.get(f"/api/conversations/{tid}/graph")
            listed = await client.get("/api/conversations")
        assert conv.status_code == 200 and conv.json()["title"] == "before"
        assert graph.status_code == 200
        assert tid in {c["thread_id"] for c in listed.json()}
    finally:
        release.set()
        await task
    assert (await client.get(f"/api/conversations/{tid}")).json()["title"] == "during"


async def test_a_sweep_with_nothing_stale_does_not_wait_for_the_lock(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The stale-turn sweep runs every heartbeat; when no turn is stale it only reads,
    so a writer holding the lock does not hold it up (nor does it queue behind one)."""
    db = db_of(app)
    holding, release = asyncio.Event(), asyncio.Event()

    async def writer() -> None:
        async with db.transaction() as s:
            await s.execute(text("UPDATE conversations SET title = title"))
            holding.set()
            await release.wait()

    task = asyncio.create_task(writer())
    await holding.wait()
    try:
        async with asyncio.timeout(3):
            assert await app.state.turns.sweep_stale() == []
    finally:
        release.set()
        await task
