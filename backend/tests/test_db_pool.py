"""`HAICO_DB_POOL_SIZE` / `HAICO_DB_POOL_OVERFLOW` size the app's PostgreSQL pool.

With the pool full, more requests at once wait for a connection instead of opening
more: 12 reads at once on a pool of 2 all answer, and PostgreSQL never sees more than
2 connections of the app's engine. SQLite ignores the settings.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"db_pool_size": 2, "db_pool_overflow": 0}


async def test_requests_beyond_the_pool_wait_for_a_connection(
    app: FastAPI, client: httpx.AsyncClient, backend: str
) -> None:
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    engine = app.state.db.engine
    opened: list[object] = []
    event.listen(engine.sync_engine, "connect", lambda conn, _rec: opened.append(conn))
    before = engine.pool.checkedin() if backend == "postgres" else 0

    answers = await asyncio.gather(
        *(client.get(f"/api/conversations/{tid}/workspace") for _ in range(12))
    )

    assert [a.status_code for a in answers] == [200] * 12
    if backend == "postgres":
        assert engine.pool.size() == 2
        assert before + len(opened) <= 2
        assert engine.pool.checkedin() <= 2
