"""A transaction PostgreSQL rolls back to break a deadlock is answered as a lost race
(409 `conflict`, nothing written, retry), never as a 500.

The services take their locks in one order so that this should not happen (the turn
sweep did not, once: `test_turns_api.test_a_send_during_the_sweep_waits_for_it`); this
is the net under that rule. PostgreSQL only: SQLite writers queue on one write lock
and cannot deadlock.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from haico.db.outage import as_domain_error, is_lost_race, is_store_outage
from haico.errors import Conflict
from tests.helpers import db_of

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


async def _deadlock(app: FastAPI, a: str, b: str) -> BaseException:
    """Two transactions lock the same two rows in opposite orders; PostgreSQL aborts
    one of them. Returns the error the loser raised, as the app's engine delivers it."""
    db = db_of(app)
    both_hold_one = asyncio.Barrier(2)

    async def lock(first: str, second: str) -> None:
        async with db.transaction() as s:
            update = text("UPDATE conversations SET title = title WHERE thread_id = :t")
            await s.execute(update, {"t": first})
            await both_hold_one.wait()
            await s.execute(update, {"t": second})

    results = await asyncio.gather(lock(a, b), lock(b, a), return_exceptions=True)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert len(errors) == 1, results
    return errors[0]


async def test_a_deadlock_is_a_lost_race_not_an_outage(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    a = (await client.post("/api/conversations", json={})).json()["thread_id"]
    b = (await client.post("/api/conversations", json={})).json()["thread_id"]
    error = await _deadlock(app, a, b)
    assert is_lost_race(error) and not is_store_outage(error)
    answer = as_domain_error(error)
    assert isinstance(answer, Conflict) and "retry" in answer.message
    assert as_domain_error(ValueError("a bug")) is None


async def test_the_http_face_answers_a_deadlock_with_409(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    a = (await client.post("/api/conversations", json={})).json()["thread_id"]
    b = (await client.post("/api/conversations", json={})).json()["thread_id"]
    error = await _deadlock(app, a, b)

    async def loses_a_race(**_: object) -> None:
        raise error

    monkeypatch.setattr(app.state.turns, "start_turn", loses_a_race)
    r = await client.post(f"/api/conversations/{a}/turns", json={"content": "hello"})
    assert r.status_code == 409, r.text
    assert r.json()["code"] == "conflict"
    assert "deadlock" not in r.text and "asyncpg" not in r.text
    monkeypatch.undo()
    # Nothing stuck: the family takes the turn.
    r = await client.post(f"/api/conversations/{a}/turns", json={"content": "hello"})
    assert r.status_code == 200
