"""The app's connections and the path of a request to them.

`HAICO_DB_POOL_SIZE` / `HAICO_DB_POOL_OVERFLOW` size the PostgreSQL pool: with it full,
more requests at once wait for a connection instead of opening more (12 reads at once
on a pool of 2 all answer; PostgreSQL never sees more than 2 connections of the app's
engine). SQLite ignores the settings. A pooled connection is pinged only after it sat
idle, and one that no longer answers is replaced before a request gets it. No request
hops to a worker thread on its way (the dependencies are coroutines).
"""

from __future__ import annotations

import asyncio
from typing import Any

import anyio.to_thread
import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event
from sqlalchemy.dialects.postgresql.asyncpg import AsyncAdapt_asyncpg_connection

from haico.db import engine as engine_module


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


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_a_connection_is_pinged_after_idling_and_replaced_when_dead(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    await client.get(f"/api/conversations/{tid}/workspace")
    engine = app.state.db.engine
    pings: list[object] = []
    real_ping = AsyncAdapt_asyncpg_connection.ping

    def ping(self: AsyncAdapt_asyncpg_connection) -> None:
        pings.append(self)
        real_ping(self)

    monkeypatch.setattr(AsyncAdapt_asyncpg_connection, "ping", ping)
    # Back to back: the connection just returned is used without a ping.
    for _ in range(5):
        assert (await client.get(f"/api/conversations/{tid}/workspace")).status_code == 200
    assert pings == []

    # After the idle time every checkout pings first; a connection that died meanwhile
    # (the server closed it) is replaced and the request still answers.
    monkeypatch.setattr(engine_module, "PING_AFTER_IDLE_SECONDS", 0.0)
    pid_sql = "SELECT pg_backend_pid()"
    async with engine.connect() as one, engine.connect() as two:
        # The pool (of 2, see settings_overrides) now holds two connections.
        pooled = {
            (await one.exec_driver_sql(pid_sql)).scalar(),
            (await two.exec_driver_sql(pid_sql)).scalar(),
        }
    async with engine.connect() as conn:
        mine = (await conn.exec_driver_sql(pid_sql)).scalar()
        (other,) = pooled - {mine}
        killed = (await conn.exec_driver_sql(f"SELECT pg_terminate_backend({int(other)})")).scalar()
    # The other pooled connection is dead, and first in line (the pool is FIFO).
    assert killed is True
    answers = [await client.get(f"/api/conversations/{tid}/workspace") for _ in range(3)]
    assert [a.status_code for a in answers] == [200] * 3
    assert len(pings) >= 3


async def test_no_request_hops_to_a_worker_thread(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    hops: list[object] = []
    run_sync = anyio.to_thread.run_sync

    async def counted(func: Any, *args: Any, **kwargs: Any) -> Any:
        hops.append(func)
        return await run_sync(func, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    calls = [
        client.get(f"/api/conversations/{tid}"),
        client.get(f"/api/conversations/{tid}/workspace"),
        client.put(f"/api/conversations/{tid}/objective", json={"text": "one"}),
        client.get(f"/api/conversations/{tid}/graph"),
        client.get(f"/api/conversations/{tid}/history"),
        client.get("/api/conversations"),
    ]
    for call in calls:
        assert (await call).status_code == 200
    assert hops == []
