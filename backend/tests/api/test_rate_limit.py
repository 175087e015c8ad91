"""Requests per second per token: over the limit a caller gets 429 with Retry-After,
other callers are unaffected, and the caller gets through again after waiting."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.api.rate_limit import MAX_TRACKED, RateLimitMiddleware
from haico.services.access import users
from tests.helpers import db_of


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token", "rate_limit_per_second": 0.5, "rate_limit_burst": 3}


async def _until_limited(send: Any, *, budget: int) -> list[httpx.Response]:
    """Send until refused: the `budget` left in the bucket always passes, and 10
    requests at 0.5/s cannot all pass however slow the machine is (14 s)."""
    answers: list[httpx.Response] = []
    while not answers or answers[-1].status_code != 429:
        assert len(answers) < 10, [r.status_code for r in answers]
        answers.append(await send())
    assert len(answers) > budget
    assert all(r.status_code in (200, 201) for r in answers[:-1])
    return answers


async def test_a_token_over_its_rate_gets_429_and_others_do_not(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    db = db_of(app)
    _, token_a = await users.create(db, name=f"a-{uuid.uuid4().hex[:8]}")
    _, token_b = await users.create(db, name=f"b-{uuid.uuid4().hex[:8]}")
    ha = {"Authorization": f"Bearer {token_a}"}
    hb = {"Authorization": f"Bearer {token_b}"}

    answers = await _until_limited(lambda: client.get("/api/conversations", headers=ha), budget=3)
    limited = answers[-1]
    assert limited.headers["retry-after"] == "2"
    assert limited.json()["code"] == "rate_limited"
    assert "per second" in limited.json()["message"]
    # Another token, and the health check, are not held up.
    assert (await client.get("/api/conversations", headers=hb)).status_code == 200
    assert (await client.get("/api/health")).status_code == 200
    # Nothing runs for a refused request: a refused create creates nothing.
    creates = await _until_limited(
        lambda: client.post("/api/conversations", json={}, headers=hb), budget=2
    )
    await asyncio.sleep(int(creates[-1].headers["retry-after"]))
    listed = await client.get("/api/conversations", headers=hb)
    assert listed.status_code == 200
    assert len(listed.json()) == sum(r.status_code == 201 for r in creates)
    assert (await client.get("/api/conversations", headers=ha)).status_code == 200


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


async def _ok(scope: Any, receive: Any, send: Any) -> None:
    return None


def test_bucket_refills_at_the_rate_and_forgets_idle_callers() -> None:
    clock = _Clock()
    limiter = RateLimitMiddleware(_ok, per_second=4.0, burst=2, clock=clock)
    assert limiter._take("x") == 0 and limiter._take("x") == 0
    assert limiter._take("x") == pytest.approx(0.25)
    clock.t += 0.25
    assert limiter._take("x") == 0
    assert limiter._take("x") > 0
    clock.t += 10  # a long pause refills to the burst, never beyond
    assert [limiter._take("x") == 0 for _ in range(3)] == [True, True, False]
    for i in range(MAX_TRACKED):
        limiter.buckets[f"idle{i}"] = type(limiter.buckets["x"])(2.0, clock.t - 60)
    limiter._take("new")
    assert "idle0" not in limiter.buckets and "new" in limiter.buckets
    assert len(limiter.buckets) <= 3
