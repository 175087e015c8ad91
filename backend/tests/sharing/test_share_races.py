"""Editors together, on PostgreSQL (real row locks): the owner and two editors of one
shared family race sends and checkouts with the race suite's invariants — one head for
all of them, never two turns at once, exactly one winner among checkouts asserting the
same expected head, and a family that passes `haico check` after every round.

Fewer rounds than `test_race_rounds.py` (a quarter; `HAICO_RACE_ROUNDS` scales both):
the locks are the same ones, only the callers differ.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.history_helpers import checkout, history
from tests.maintenance.test_race_rounds import _answered, _consistent, two_sends
from tests.share_helpers import new_user
from tests.sse_client import send_turn

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

ROUNDS = max(20, int(os.environ.get("HAICO_RACE_ROUNDS", "200")) // 4)


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


@pytest.fixture
async def team(app: FastAPI) -> AsyncIterator[tuple[str, list[httpx.AsyncClient]]]:
    """A family with two turns, and clients for its owner and two editors."""
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    owner, owner_h = await new_user(app, "own")
    clients = [httpx.AsyncClient(transport=transport, base_url="http://t", headers=owner_h)]
    tid = (await clients[0].post("/api/conversations", json={})).json()["thread_id"]
    for k in (1, 2):
        assert (await send_turn(clients[0], tid, f"todo: t{k}"))[0] == 200
    for name in ("ed1", "ed2"):
        user, headers = await new_user(app, name)
        made = await clients[0].post(
            f"/api/conversations/{tid}/shares", json={"role": "editor", "user": user.name}
        )
        assert made.status_code == 201
        clients.append(httpx.AsyncClient(transport=transport, base_url="http://t", headers=headers))
    assert owner.id
    try:
        yield tid, clients
    finally:
        for c in clients:
            await c.aclose()


async def test_editors_send_at_once(
    app: FastAPI, team: tuple[str, list[httpx.AsyncClient]]
) -> None:
    """Two editors send at once: never two turns at a time; a second send that waited
    for the first follows it; the head is the newest turn, seen alike by everyone."""
    tid, (owner, ed1, ed2) = team
    turns = 2
    raced = 0
    for i in range(ROUNDS):
        sent = await asyncio.gather(
            send_turn(ed1, tid, f"todo: a{i}; wait: 0.05"),
            send_turn(ed2, tid, f"todo: b{i}; wait: 0.05"),
        )
        turns, race = two_sends(i, tid, turns, sent)
        raced += race
        seen = [await history(c, tid) for c in (owner, ed1, ed2)]
        assert seen[0] == seen[1] == seen[2], (i, seen)
        assert seen[0]["head_turn_id"] == f"{tid}:{turns}" and seen[0]["active_turn"] is None
    await _consistent(app, tid)
    assert raced >= 0.8 * ROUNDS, raced


async def test_owner_and_editors_check_out_at_once(
    app: FastAPI, team: tuple[str, list[httpx.AsyncClient]]
) -> None:
    """The owner and both editors check out different nodes asserting the head they
    read: exactly one wins, the others answer 409 `conflict`; the head is the
    winner's node for everyone."""
    tid, clients = team
    nodes: list[str | None] = [f"{tid}:1", f"{tid}:2", None]
    for i in range(ROUNDS):
        head = (await history(clients[0], tid))["head_turn_id"]
        others = [n for n in nodes if n != head]
        targets = [others[(i + k) % len(others)] for k in range(3)]
        answers = await asyncio.gather(
            *(
                checkout(c, tid, t, expected_head_turn_id=head, force=True)
                for c, t in zip(clients, targets, strict=True)
            )
        )
        won = [(t, r) for t, r in zip(targets, answers, strict=True) if r.status_code == 200]
        assert len(won) == 1, (i, [r.text for r in answers])
        for r in answers:
            assert r.status_code == 200 or r.json()["code"] == "conflict", r.text
        for c in clients:
            assert (await history(c, tid))["head_turn_id"] == won[0][0], i
    await _consistent(app, tid)


async def test_an_editors_send_and_anothers_checkout(
    app: FastAPI, team: tuple[str, list[httpx.AsyncClient]]
) -> None:
    """One editor sends while the other checks out an earlier node asserting the head:
    each answers 200 or 409 (never a 500), no turn is left running, the family passes
    `haico check`; a refused send means the checkout went through."""
    tid, (_, ed1, ed2) = team
    for i in range(ROUNDS):
        before = await history(ed1, tid)
        co, sent = await asyncio.gather(
            checkout(
                ed2,
                tid,
                f"{tid}:{1 + i % 2}",
                expected_head_turn_id=before["head_turn_id"],
                force=True,
            ),
            send_turn(ed1, before["working_thread_id"], f"todo: r{i}"),
        )
        if _answered(co, {200, 409}) == 409:
            assert co.json()["code"] in ("turn_in_progress", "conflict"), co.text
        if _answered(sent, {200, 409}) == 409:
            assert sent[2]["code"] in ("turn_in_progress", "conflict"), sent[2]
            assert co.status_code == 200
        after = await history(ed2, tid)
        assert after["active_turn"] is None, (i, after)
        await _consistent(app, tid)
