"""Joins arriving together are made together (`join_queue`): numbered and balanced as
one at a time (across two queues too), in the statements of one join, a close honoured
by every batch drained after it, one bad join failing only its own caller, a caller
that leaves not breaking the batch, a clean shutdown."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select
from sqlalchemy.exc import IntegrityError

from haico.db.models_studies import StudyParticipant
from haico.errors import StudyClosed
from haico.schemas.studies import JoinOut
from haico.services.studies import joining
from haico.services.studies.join_queue import JoinQueue
from tests.helpers import db_of, recorded_sql
from tests.studies.kit import Joined, join, make_study, owner, row_counts


def queue_of(app: FastAPI) -> JoinQueue:
    queue: JoinQueue = app.state.handles.joins
    return queue


def spy_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every batch the queue makes, in order."""
    sizes: list[int] = []
    original = joining.join_batch

    async def counted(*args: Any, **kwargs: Any) -> list[JoinOut]:
        sizes.append(len(kwargs["joiners"]))
        return await original(*args, **kwargs)

    monkeypatch.setattr(joining, "join_batch", counted)
    return sizes


async def numbers(app: FastAPI, study: dict[str, Any]) -> list[int]:
    """The study's participant numbers in the store."""
    stmt = (
        select(StudyParticipant.number)
        .where(StudyParticipant.study_id == study["id"])
        .order_by(StudyParticipant.number)
    )
    async with db_of(app).read() as s:
        found = await s.scalars(stmt)
    return list(found)


async def test_joins_at_once_are_batched_numbered_and_balanced(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    who = await owner(app)
    study = await make_study(client, who)
    sizes = spy_batches(monkeypatch)
    token = study["join_token"]
    through_service = [queue_of(app).join(token) for _ in range(30)]
    through_rest = [join(client, study) for _ in range(10)]
    joined: list[JoinOut | Joined] = await asyncio.gather(*through_service, *through_rest)
    assert sorted(j.participant for j in joined) == [f"P{i:03d}" for i in range(1, 41)]
    assert await numbers(app, study) == list(range(1, 41))
    names = Counter(
        j.condition.name if isinstance(j, JoinOut) else j.condition["name"] for j in joined
    )
    assert names == {"branching": 20, "linear": 20}
    assert len({j.thread_id for j in joined}) == 40
    assert len({j.token for j in joined}) == 40
    # Made in a few transactions, not forty.
    assert sum(sizes) == 40 and max(sizes) >= 30
    # Each participant's token reaches its own family.
    for j in joined[:3] + joined[-3:]:
        me = await joining.authenticate(db_of(app), token=j.token)
        assert me.family == j.thread_id


async def test_two_queues_number_one_study_without_a_gap(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two processes' queues (two queues on one store here) joining one study at once:
    their batches are counted one after another under the study's lock, so neither
    trips over the other's numbers (no batch fails and is retried)."""
    who = await owner(app)
    study = await make_study(client, who)
    sizes = spy_batches(monkeypatch)
    token = study["join_token"]
    one, two = JoinQueue(db_of(app)), JoinQueue(db_of(app))
    joined = await asyncio.gather(*(q.join(token) for q in (one, two) for _ in range(15)))
    assert sorted(j.participant for j in joined) == [f"P{i:03d}" for i in range(1, 31)]
    assert Counter(j.condition.name for j in joined) == {"branching": 15, "linear": 15}
    assert await numbers(app, study) == list(range(1, 31))
    assert sizes == [15, 15]


async def test_a_batch_costs_the_statements_of_one_join(
    app: FastAPI, client: httpx.AsyncClient, backend: str
) -> None:
    """Twenty joins in a batch run as many SQL statements as one join alone: each kind
    of row is written with one statement for the whole batch. (On SQLite the action
    log's append runs one INSERT a row, in process, to read each row's `seq` back in
    order: `events.log.append_rows`; those are left out of the count there.)"""
    who = await owner(app)
    study = await make_study(client, who)
    db, token = db_of(app), study["join_token"]

    def counted(statements: list[str]) -> int:
        if backend == "sqlite":
            statements = [x for x in statements if not x.startswith("INSERT INTO action_log")]
        return len(statements)

    with recorded_sql(db) as alone:
        await joining.join_batch(db, token=token, joiners=[joining.Joiner.new()])
    with recorded_sql(db) as together:
        joiners = [joining.Joiner.new() for _ in range(20)]
        await joining.join_batch(db, token=token, joiners=joiners)
    assert counted(together) == counted(alone), together
    assert await numbers(app, study) == list(range(1, 22))


class Gate:
    """Holds the queue's first batch, before it is made or (`after`) once it is made,
    until `open` is set."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, *, after: bool = False) -> None:
        self.sizes: list[int] = []
        self.held, self.open = asyncio.Event(), asyncio.Event()
        original = joining.join_batch

        async def gated(*args: Any, **kwargs: Any) -> list[JoinOut]:
            self.sizes.append(len(kwargs["joiners"]))
            first = len(self.sizes) == 1
            if first and not after:
                await self.hold()
            out = await original(*args, **kwargs)
            if first and after:
                await self.hold()
            return out

        monkeypatch.setattr(joining, "join_batch", gated)

    async def hold(self) -> None:
        self.held.set()
        await self.open.wait()


@pytest.mark.parametrize("made", [True, False], ids=["made-before", "taken-before"])
async def test_a_close_stops_the_joins_drained_after_it(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch, made: bool
) -> None:
    """Joiners waiting when the study is closed are refused when their batch is made. A
    batch made before the close keeps its participant; one taken from the line but not
    yet made is refused too (the state is read under the study's lock)."""
    who = await owner(app)
    study = await make_study(client, who)
    gate = Gate(monkeypatch, after=made)
    queue, token = queue_of(app), study["join_token"]
    first = asyncio.create_task(queue.join(token))
    await gate.held.wait()
    later = [asyncio.create_task(queue.join(token)) for _ in range(5)]
    await asyncio.sleep(0)  # they wait in the line now
    r = await client.patch(f"/api/studies/{study['id']}", json={"state": "closed"}, headers=who.h)
    assert r.status_code == 200, r.text
    gate.open.set()
    results = await asyncio.gather(first, *later, return_exceptions=True)
    if made:
        assert isinstance(results[0], JoinOut) and results[0].participant == "P001"
    assert all(isinstance(x, StudyClosed) for x in results[int(made) :]), results
    assert gate.sizes == [1, 5]
    assert await numbers(app, study) == ([1] if made else [])


async def test_a_failed_join_fails_alone(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One joiner's family id is taken already: its batch fails and is kept in nothing,
    each joiner is made alone, the others join (numbered without a gap), and the bad
    one's caller gets the error, with no row of it left."""
    who = await owner(app)
    study = await make_study(client, who)
    taken = (await join(client, study)).thread_id
    before = await row_counts(app)
    drawn = 0
    plain = joining.new_thread_id

    def fourth_is_taken() -> str:
        nonlocal drawn
        drawn += 1
        return taken if drawn == 4 else plain()

    monkeypatch.setattr(joining, "new_thread_id", fourth_is_taken)
    sizes = spy_batches(monkeypatch)
    results = await asyncio.gather(
        *(queue_of(app).join(study["join_token"]) for _ in range(8)), return_exceptions=True
    )
    assert isinstance(results[3], IntegrityError), results[3]
    ok = [x for x in results if isinstance(x, JoinOut)]
    assert sorted(j.participant for j in ok) == [f"P{i:03d}" for i in range(2, 9)]
    assert sizes == [8, 1, 1, 1, 1, 1, 1, 1, 1]
    users, convs, parts = before
    assert await row_counts(app) == (users + 7, convs + 7, parts + 7)
    assert await numbers(app, study) == list(range(1, 9))


async def test_a_caller_that_leaves_does_not_break_the_batch(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One caller leaves while its batch is being made: the batch goes on (its join
    is made, its answer dropped). Another leaves while waiting: it is left out."""
    who = await owner(app)
    study = await make_study(client, who)
    gate = Gate(monkeypatch)
    queue, token = queue_of(app), study["join_token"]
    taken = [asyncio.create_task(queue.join(token)) for _ in range(3)]
    await gate.held.wait()
    waiting = [asyncio.create_task(queue.join(token)) for _ in range(5)]
    await asyncio.sleep(0)
    taken[1].cancel()
    waiting[2].cancel()
    gate.open.set()
    results = await asyncio.gather(*taken, *waiting, return_exceptions=True)
    left = [isinstance(x, asyncio.CancelledError) for x in results]
    assert left == [False, True, False, False, False, True, False, False]
    assert all(isinstance(x, JoinOut) for x, gone in zip(results, left, strict=True) if not gone)
    assert gate.sizes == [3, 4]
    assert await numbers(app, study) == list(range(1, 8))


async def test_close_lets_the_lines_finish(app: FastAPI, client: httpx.AsyncClient) -> None:
    """The app's shutdown waits for the joins under way; a join after it is made alone."""
    who = await owner(app)
    study = await make_study(client, who)
    queue = JoinQueue(db_of(app))
    pending = [asyncio.create_task(queue.join(study["join_token"])) for _ in range(4)]
    await asyncio.sleep(0)
    await queue.close()
    assert all(task.done() for task in pending)
    after = await queue.join(study["join_token"])
    assert sorted([t.result().participant for t in pending] + [after.participant]) == [
        f"P00{i}" for i in range(1, 6)
    ]
