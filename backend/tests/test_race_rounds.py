"""Races with many rounds on PostgreSQL: exactly one winner, every round.

Two checkouts asserting the same expected head, two sends on one family, branch
creations on one thread, REST edits while a turn edits the same workspace,
retention racing a checkout, two first writes of one document, a send racing a
checkout, and a send racing the delete of its thread. The invariant is checked after
every round.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.repositories import threads as threads_repo
from app.domain import now
from app.services import consistency
from app.services import workspace as ws_service
from app.services.pruning import prune_family_in
from tests.helpers import db_of
from tests.history_helpers import (
    checkout,
    graph,
    history,
    thread_with_turns,
    turn_ok,
    workspace,
)
from tests.sse_client import send_turn

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

# Rounds per race (at least 200 each; a longer run: HAICO_RACE_ROUNDS=1000).
ROUNDS = int(os.environ.get("HAICO_RACE_ROUNDS", "200"))
# Rounds of the races whose family grows every round.
GROWING_ROUNDS = min(ROUNDS, 200)


async def test_checkouts_with_one_expected_head(client: httpx.AsyncClient) -> None:
    tid = await thread_with_turns(client, 3)
    nodes: list[str | None] = [f"{tid}:1", f"{tid}:2", f"{tid}:3", None]
    for i in range(ROUNDS):
        head = (await history(client, tid))["head_turn_id"]
        # two different targets, neither the head itself (checking out the head keeps
        # the expected head true, so a second checkout may then win too)
        others = [n for n in nodes if n != head]
        a, b = others[i % len(others)], others[(i + 1 + i // 3) % len(others)]
        if a == b:
            b = others[(others.index(b) + 1) % len(others)]
        ra, rb = await asyncio.gather(
            checkout(client, tid, a, expected_head_turn_id=head, force=True),
            checkout(client, tid, b, expected_head_turn_id=head, force=True),
        )
        won = [t for t, r in ((a, ra), (b, rb)) if r.status_code == 200]
        assert len(won) == 1, (i, ra.text, rb.text)
        for r in (ra, rb):
            assert r.status_code in (200, 409) and (
                r.status_code == 200 or r.json()["code"] == "conflict"
            ), r.text
        assert (await history(client, tid))["head_turn_id"] == won[0], i


async def test_sends_on_one_family(client: httpx.AsyncClient) -> None:
    """Two sends at once on one family: never two turns at a time. Each turn lasts a
    little (`wait: 0.05`), so the second send meets the first one's lease and is
    refused (409). A send that the scheduler delays until the first turn has ended is
    no race: it must then follow that turn (its parent is the first turn's node, so it
    opened after the first one closed). Most rounds must be real races."""
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    turns = raced = 0
    for i in range(ROUNDS):
        (sa, ea, _), (sb, eb, _) = await asyncio.gather(
            send_turn(client, tid, f"todo: a{i}; wait: 0.05"),
            send_turn(client, tid, f"todo: b{i}; wait: 0.05"),
        )
        assert all(s in (200, 409) for s in (sa, sb)), (i, sa, sb)
        winners = sorted(
            (e for s, e in ((sa, ea), (sb, eb)) if s == 200), key=lambda e: e[0][1]["turn_index"]
        )
        assert winners, (i, sa, sb)
        if len(winners) == 1:
            raced += 1
        else:
            first, second = (w[0][1] for w in winners)
            assert second["parent_node_id"] == first["node_id"], (i, first, second)
        for events in winners:
            turns += 1
            assert events[0][1]["node_id"] == f"{tid}:{turns}"
            assert events[-1][0] == "turn_completed"
        h = await history(client, tid)
        assert h["head_turn_id"] == f"{tid}:{turns}" and h["active_turn"] is None
    assert raced >= 0.8 * ROUNDS, raced


async def test_branch_creations_on_one_thread(client: httpx.AsyncClient) -> None:
    """Three branches at once from one thread: every one is created once, at its own
    branch point, none lost or doubled, nothing left half-built."""
    tid = await thread_with_turns(client, 3)
    made: set[str] = set()
    for i in range(GROWING_ROUNDS):
        points = [1 + (i + k) % 3 for k in range(3)]
        answers = await asyncio.gather(
            *(
                client.post(f"/api/conversations/{tid}/branch", json={"from_turn": p})
                for p in points
            )
        )
        assert all(r.status_code == 201 for r in answers), (i, [r.text for r in answers])
        ids = {r.json()["thread_id"] for r in answers}
        assert len(ids) == 3 and not ids & made, i
        assert [r.json()["branch_point_turn"] for r in answers] == points
        made |= ids
        listed = {c["thread_id"] for c in (await client.get("/api/conversations")).json()}
        assert listed == made | {tid}, i


async def test_workspace_edits_while_a_turn_runs(client: httpx.AsyncClient) -> None:
    """A REST edit and the agent's edit of one workspace at once: both land (no lost
    update), the turn clock moves by exactly one, and the working thread's tip is the
    head."""
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    for i in range(GROWING_ROUNDS):
        (status, events, _), added = await asyncio.gather(
            send_turn(client, tid, f"todo: agent {i}"),
            client.post(f"/api/conversations/{tid}/todos", json={"text": f"rest {i}"}),
        )
        assert status == 200 and events[-1][0] == "turn_completed", (i, events[-1])
        assert added.status_code == 201, (i, added.text)
        todos = [t["text"] for t in (await workspace(client, tid))["todos"]]
        assert f"agent {i}" in todos and f"rest {i}" in todos, (i, todos)
        assert len(todos) == 2 * (i + 1), (i, todos)
        conv = (await client.get(f"/api/conversations/{tid}")).json()
        assert conv["turn_index"] == i + 1, i
        h = await history(client, tid)
        assert h["head_turn_id"] == f"{tid}:{i + 1}" and h["working_thread_id"] == tid


async def test_first_document_writes_at_once(client: httpx.AsyncClient) -> None:
    """Two first writes of a thread's document at once (neither finds a document row):
    both succeed and the document is one of the two, never a 500 on the row's unique
    thread id (seen in a soak run)."""
    for i in range(ROUNDS):
        tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
        bodies = [f"first {i}", f"second {i}"]
        puts = await asyncio.gather(
            *(client.put(f"/api/conversations/{tid}/document", json={"content": b}) for b in bodies)
        )
        assert [r.status_code for r in puts] == [200, 200], (i, [r.text for r in puts])
        assert (await workspace(client, tid))["document"]["content"] in bodies, i


async def test_an_edit_of_a_thread_deleted_after_its_read_is_a_conflict(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkout deletes a restored draft between an edit's read of the draft and its
    write (a soak run hit this): the edit answers 409 `conflict`, not a 500, and
    changes nothing; the next try answers 404."""
    tid = await thread_with_turns(client, 2)
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    db = db_of(app)
    read = ws_service.get_owned

    async def read_then_lose_it(s: AsyncSession, **kw: Any) -> Any:
        found = await read(s, **kw)
        async with db.transaction() as other:  # another request's checkout, committed
            await threads_repo.delete_thread_rows(other, draft)
        return found

    monkeypatch.setattr(ws_service, "get_owned", read_then_lose_it)
    r = await client.put(f"/api/conversations/{draft}/objective", json={"text": "lost"})
    assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    monkeypatch.setattr(ws_service, "get_owned", read)
    r = await client.put(f"/api/conversations/{draft}/objective", json={"text": "lost"})
    assert r.status_code == 404, r.text
    assert (await workspace(client, tid))["objective"] != "lost"


async def test_retention_never_leaves_the_head_on_a_pruned_node(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await thread_with_turns(client, 2)
    db = db_of(app)
    for i in range(max(20, ROUNDS // 20)):
        r = await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1})
        branch = r.json()["thread_id"]
        await turn_ok(client, branch, f"todo: off path {i}")
        await checkout(client, tid, f"{tid}:2", force=True)  # the branch is off the path

        async def retain() -> None:
            async with db.transaction() as s:
                await prune_family_in(s, tid, max_age=None, max_branches=0, now=now())

        co, _ = await asyncio.gather(checkout(client, tid, f"{branch}:2", force=True), retain())
        # retention first: the node is gone (404); or it held the lock: 409 conflict
        assert co.status_code in (200, 404, 409), co.text
        h = await history(client, tid)
        nodes = {n["id"] for n in (await graph(client, h["working_thread_id"]))["nodes"]}
        assert h["head_turn_id"] in nodes, (i, co.status_code, h)


async def _consistent(app: FastAPI, root: str) -> None:
    report = await consistency.check(db_of(app), None, max_age_seconds=600, roots={root})
    assert report.families == 1 and report.problems == [], report.problems


def _answered(r: httpx.Response | tuple[int, Any, Any], allowed: set[int]) -> int:
    status = r.status_code if isinstance(r, httpx.Response) else r[0]
    assert status in allowed, r.text if isinstance(r, httpx.Response) else r
    return status


async def test_a_send_and_a_checkout_at_once(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A send on the working thread and a checkout to an earlier node of the same family
    at once. Whatever the order, each answers 200 or 409 (never a 500), no turn is left
    running, and the family passes `haico check` (heads on retained nodes, clocks
    without gaps, the working thread's tip is the head)."""
    root = await thread_with_turns(client, 2)
    for i in range(GROWING_ROUNDS):
        h = await history(client, root)
        working = h["working_thread_id"]
        target = f"{root}:{1 + i % 2}"
        (sent, checked) = await asyncio.gather(
            send_turn(client, working, f"todo: r{i}"),
            checkout(client, root, target, force=True),
        )
        _answered(sent, {200, 409})
        _answered(checked, {200, 409})
        after = await history(client, root)
        assert after["active_turn"] is None, (i, after)
        await _consistent(app, root)


async def test_a_send_and_a_delete_of_its_thread_at_once(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A branch is sent to and deleted at once: the send answers 200, 404 or 409, the
    delete 204 or 409 (never a 500); a deleted branch is gone from the list; no turn is
    left running and the family passes `haico check`."""
    root = await thread_with_turns(client, 1)
    for i in range(GROWING_ROUNDS):
        branch = await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
        assert branch.status_code == 201, branch.text
        bid = branch.json()["thread_id"]

        async def delete_after(delay: float, thread_id: str = bid) -> httpx.Response:
            await asyncio.sleep(delay)
            return await client.delete(f"/api/conversations/{thread_id}")

        # The delete leaves 0-28 ms after the send, so rounds fall on both sides of
        # the moment the send opens its turn.
        sent, deleted = await asyncio.gather(
            send_turn(client, bid, f"todo: d{i}"), delete_after((i % 8) * 0.004)
        )
        _answered(sent, {200, 404, 409})
        gone = _answered(deleted, {204, 409}) == 204
        listed = {c["thread_id"] for c in (await client.get("/api/conversations")).json()}
        assert (bid not in listed) == gone, i
        assert (await history(client, root))["active_turn"] is None, i
        await _consistent(app, root)
