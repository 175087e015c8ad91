"""Races with many rounds on PostgreSQL: exactly one winner, every round.

Two to four checkouts asserting the same expected head, two sends on one family,
branch creations on one thread, REST edits while a turn edits the same workspace,
retention racing a checkout, two first writes of one document, a send racing a
checkout, and a send racing the delete of its thread. The invariant is checked after
every round, on what the round changed (its answers, the head, the threads it made),
so a round costs the same however large the family has grown; what grows (the
conversation list) is checked whole once, after the last round.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable
from typing import Any, TypeVar

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.repositories import threads as threads_repo
from haico.domain import now
from haico.services.big_trees.pruning import prune_family_in
from haico.services.maintenance import consistency
from haico.services.workspace import edits as ws_service
from tests.helpers import db_of
from tests.history_helpers import (
    checkout,
    draft_ids,
    family_size,
    graph,
    history,
    thread_with_turns,
    turn_ok,
    workspace,
)
from tests.sse_client import send_turn

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

# Rounds per race (at least 200 each; `make test-long` runs HAICO_RACE_ROUNDS=1000).
ROUNDS = int(os.environ.get("HAICO_RACE_ROUNDS", "200"))
T = TypeVar("T")


async def test_checkouts_with_one_expected_head(app: FastAPI, client: httpx.AsyncClient) -> None:
    """Two to four checkouts at once, all asserting the head they read: exactly one
    wins, every other answers 409 `conflict`; the head is the winner's node, the
    winner's answer is the history, and the only draft left is the working thread."""
    tid = await thread_with_turns(client, 4)
    nodes: list[str | None] = [f"{tid}:{k}" for k in range(1, 5)] + [None]
    for i in range(ROUNDS):
        head = (await history(client, tid))["head_turn_id"]
        # different targets, none the head itself (checking out the head keeps the
        # expected head true, so a second checkout may then win too)
        others = [n for n in nodes if n != head]
        targets = [others[(i + k) % len(others)] for k in range(2 + i % 3)]
        answers = await asyncio.gather(
            *(
                checkout(client, tid, t, expected_head_turn_id=head, force=i % 2 == 1)
                for t in targets
            )
        )
        won = [(t, r) for t, r in zip(targets, answers, strict=True) if r.status_code == 200]
        assert len(won) == 1, (i, [r.text for r in answers])
        for r in answers:
            assert r.status_code == 200 or r.json()["code"] == "conflict", r.text
        h = await history(client, tid)
        assert h["head_turn_id"] == won[0][0] and h == won[0][1].json(), (i, h)
        working = h["working_thread_id"]
        assert await draft_ids(app, tid) == ([] if working == tid else [working]), (i, h)


async def test_sends_on_one_family(client: httpx.AsyncClient) -> None:
    """Two sends at once on one family: never two turns at a time. Each turn lasts a
    little (`wait: 0.05`), so the second send meets the first one's lease and is
    refused (409). A send that the scheduler delays until the first turn has ended is
    no race: it must then follow that turn (its parent is the first turn's node, so it
    opened after the first one closed). Most rounds must be real races."""
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    turns = raced = 0
    for i in range(ROUNDS):
        sent = await asyncio.gather(
            send_turn(client, tid, f"todo: a{i}; wait: 0.05"),
            send_turn(client, tid, f"todo: b{i}; wait: 0.05"),
        )
        turns, race = two_sends(i, tid, turns, sent)
        raced += race
        h = await history(client, tid)
        assert h["head_turn_id"] == f"{tid}:{turns}" and h["active_turn"] is None
    assert raced >= 0.8 * ROUNDS, raced


async def test_branch_creations_on_one_thread(app: FastAPI, client: httpx.AsyncClient) -> None:
    """Three branches at once from one thread: every one is created once, at its own
    branch point, none lost or doubled, nothing left half-built."""
    tid = await thread_with_turns(client, 3)
    made: set[str] = set()
    for i in range(ROUNDS):
        points = [1 + (i + k) % 3 for k in range(3)]
        answers = await asyncio.gather(
            *(
                client.post(f"/api/conversations/{tid}/branch", json={"from_turn": p})
                for p in points
            )
        )
        assert all(r.status_code == 201 for r in answers), (i, [r.text for r in answers])
        ids = [r.json()["thread_id"] for r in answers]
        assert len(set(ids)) == 3 and not set(ids) & made, i
        assert [r.json()["branch_point_turn"] for r in answers] == points
        made |= set(ids)
        # each one is served whole (a half-built branch answers 404), and the family
        # holds exactly these three more threads: none doubled
        for bid, point in zip(ids, points, strict=True):
            got = (await client.get(f"/api/conversations/{bid}")).json()
            assert (got["parent_thread_id"], got["branch_point_turn"]) == (tid, point), got
        assert await family_size(app, tid) == 1 + len(made), i
    listed = {c["thread_id"] for c in (await client.get("/api/conversations")).json()}
    assert listed == made | {tid}


async def test_workspace_edits_while_a_turn_runs(client: httpx.AsyncClient) -> None:
    """A REST edit and the agent's edit of one workspace at once: both land (no lost
    update), the turn clock moves by exactly one, and the working thread's tip is the
    head."""
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    for i in range(ROUNDS):
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
    read = ws_service.get_for

    async def read_then_lose_it(s: AsyncSession, *args: Any, **kw: Any) -> Any:
        found = await read(s, *args, **kw)
        async with db.transaction() as other:  # another request's checkout, committed
            await threads_repo.delete_thread_rows(other, draft)
        return found

    monkeypatch.setattr(ws_service, "get_for", read_then_lose_it)
    r = await client.put(f"/api/conversations/{draft}/objective", json={"text": "lost"})
    assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    monkeypatch.setattr(ws_service, "get_for", read)
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


def two_sends(i: int, tid: str, turns: int, sent: list[tuple[int, Any, Any]]) -> tuple[int, bool]:
    """The invariant of two sends raced on one family (`send_turn` answers): each 200
    or 409, at least one through; a second one through followed the first (its parent
    is the first's node); the nodes are the family's next turns in order, each complete.
    Returns the family's turn count after them and whether it was a real race (one
    refused)."""
    (sa, ea, _), (sb, eb, _) = sent
    assert all(s in (200, 409) for s in (sa, sb)), (i, sa, sb)
    winners = sorted(
        (e for s, e in ((sa, ea), (sb, eb)) if s == 200), key=lambda e: e[0][1]["turn_index"]
    )
    assert winners, (i, sa, sb)
    if len(winners) == 2:
        first, second = (w[0][1] for w in winners)
        assert second["parent_node_id"] == first["node_id"], (i, first, second)
    for events in winners:
        turns += 1
        assert events[0][1]["node_id"] == f"{tid}:{turns}"
        assert events[-1][0] == "turn_completed"
    return turns, len(winners) == 1


async def _consistent(app: FastAPI, root: str) -> None:
    report = await consistency.check(db_of(app), None, max_age_seconds=600, roots={root})
    assert report.families == 1 and report.problems == [], report.problems


async def _later(delay: float, call: Awaitable[T]) -> T:
    """`call`, started `delay` seconds from now (a race's stagger)."""
    await asyncio.sleep(delay)
    return await call


def _answered(r: httpx.Response | tuple[int, Any, Any], allowed: set[int]) -> int:
    status = r.status_code if isinstance(r, httpx.Response) else r[0]
    assert status in allowed, r.text if isinstance(r, httpx.Response) else r
    return status


async def test_a_send_and_a_checkout_at_once(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A send and a checkout to an earlier node of the same family at once, one side a
    little later, alternating, so both orders happen. The send goes to the working
    thread, or every other round to the root (which first checks out the root's tip
    when the root is not the working thread). The checkout asserts the head it read,
    or every other round forces. Each answers 200 or 409 `turn_in_progress` /
    `conflict` (never a 500); no turn is left running, and the family passes `haico
    check` (heads on retained nodes, clocks without gaps, the working thread's tip is
    the head). A send that goes through ends the turn and starts from the head it met
    (a checkout refused meanwhile); a send refused means the checkout went through,
    and its answer is the history."""
    root = await thread_with_turns(client, 2)
    for i in range(ROUNDS):
        before = await history(client, root)
        root_clock = (await client.get(f"/api/conversations/{root}")).json()["turn_index"]
        to = before["working_thread_id"] if i % 4 < 2 else root
        target = f"{root}:{1 + i % 2}"
        expected = {} if i % 4 in (1, 2) else {"expected_head_turn_id": before["head_turn_id"]}
        delay_co, delay_send = (0.0, 0.01 * (i % 3)) if i % 2 else (0.01 * (i % 3), 0.0)

        co, sent = await asyncio.gather(
            _later(delay_co, checkout(client, root, target, force=not expected, **expected)),
            _later(delay_send, send_turn(client, to, f"todo: r{i}")),
        )
        status, events, body = sent
        if _answered(co, {200, 409}) == 409:
            assert co.json()["code"] in ("turn_in_progress", "conflict"), co.text
        if _answered(sent, {200, 409}) == 409:
            assert body["code"] in ("turn_in_progress", "conflict"), body
        after = await history(client, root)
        assert after["active_turn"] is None, (i, after)
        await _consistent(app, root)
        if status != 200:
            assert co.status_code == 200 and after == co.json(), (i, co.text, after)
            continue
        assert events[-1][0] == "turn_completed", (i, events[-1])
        node = events[0][1]["node_id"]
        # the head is the sent turn, unless a forced checkout came after it ended
        assert after["head_turn_id"] in ({node} if expected else {node, target}), (i, after)
        if co.status_code == 409:
            # the send continues from the head when it posts to the working thread;
            # otherwise it first checks out the posted thread's tip (its own step)
            parent = (
                before["head_turn_id"]
                if to == before["working_thread_id"]
                else f"{root}:{root_clock}"
            )
            assert events[0][1]["parent_node_id"] == parent, (i, events[0], before)
    # the graph's head is the history's
    h = await history(client, root)
    assert (await graph(client, h["working_thread_id"]))["head_turn_id"] == h["head_turn_id"]


async def test_a_send_and_a_delete_of_its_thread_at_once(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A branch is sent to and deleted at once: the send answers 200, 404 or 409, the
    delete 204 or 409 (never a 500); a deleted branch is gone (404, and from the list);
    no turn is left running and the family passes `haico check`."""
    root = await thread_with_turns(client, 1)
    kept = {root}
    for i in range(ROUNDS):
        branch = await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
        assert branch.status_code == 201, branch.text
        bid = branch.json()["thread_id"]
        # The delete leaves 0-28 ms after the send, so rounds fall on both sides of
        # the moment the send opens its turn.
        sent, deleted = await asyncio.gather(
            send_turn(client, bid, f"todo: d{i}"),
            _later((i % 8) * 0.004, client.delete(f"/api/conversations/{bid}")),
        )
        _answered(sent, {200, 404, 409})
        gone = _answered(deleted, {204, 409}) == 204
        if not gone:
            kept.add(bid)
        got = await client.get(f"/api/conversations/{bid}")
        assert got.status_code == (404 if gone else 200), (i, got.text)
        assert (await history(client, root))["active_turn"] is None, i
        await _consistent(app, root)
    listed = {c["thread_id"] for c in (await client.get("/api/conversations")).json()}
    assert listed == kept
