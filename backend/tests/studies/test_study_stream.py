"""The study's event stream over a real socket, on SQLite and PostgreSQL: joins,
consents, finishes and the turns of every family arrive live (a family joined after
the stream opened included), streamed text does not, a reconnect with `after=`
resumes where it stopped (or, past the log's window, starts with a resync), a
member removed while following sees it end, and a join whose action cannot be logged
leaves nothing behind."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import delete, func, select

from haico.db.models import ActionLogEntry, Conversation, StudyMember, StudyParticipant
from haico.events import log as action_log
from haico.services.studies import study_events
from tests.helpers import db_of
from tests.history_helpers import live_server
from tests.share_helpers import bearer
from tests.studies.reports_helpers import add_member, new_study

Events = list[tuple[str, dict[str, Any]]]


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def follow(
    base: str,
    path: str,
    headers: dict[str, str],
    until: Callable[[Events], bool],
    *,
    after: int = 0,
    ready: asyncio.Event | None = None,
    wait: float = 20.0,
) -> Events:
    """Read the SSE stream at `path` until `until(events)` holds, or it ends."""
    events: Events = []

    async def run() -> None:
        async with (
            httpx.AsyncClient(base_url=base, timeout=None, headers=headers) as c,
            c.stream("GET", path, params={"after": after}) as r,
        ):
            assert r.status_code == 200, await r.aread()
            if ready is not None:
                ready.set()
            buf = ""
            async for chunk in r.aiter_text():
                buf += chunk
                while "\n\n" in buf:
                    block, buf = buf.split("\n\n", 1)
                    name, data = "", []
                    for line in block.splitlines():
                        if line.startswith("event:"):
                            name = line[6:].strip()
                        elif line.startswith("data:"):
                            data.append(line[5:].strip())
                    if data:
                        events.append((name, json.loads("\n".join(data))))
                        if until(events):
                            return

    try:
        await asyncio.wait_for(run(), timeout=wait)
    except TimeoutError as exc:
        raise AssertionError(f"the stream never satisfied the condition; got {events}") from exc
    return events


def types(events: Events) -> list[str]:
    return [e["action"]["type"] for name, e in events if name == "action"]


def errored(events: Events) -> bool:
    return any(name == "error" for name, _ in events)


def ends_with(kind: str, count: int = 1) -> Callable[[Events], bool]:
    return lambda events: types(events).count(kind) >= count


async def test_the_dashboard_sees_joins_consents_turns_and_finishes_live_and_resumes(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    study = await new_study(app, "graph", "linear")
    path = f"/api/studies/{study.id}/events"
    async with live_server(app) as base:
        ready = asyncio.Event()
        watching = asyncio.create_task(
            follow(base, path, study.owner_h, ends_with(study_events.FINISHED), ready=ready)
        )
        await ready.wait()
        joined = await client.post("/api/studies/join", json={"token": study.tokens[1]})
        assert joined.status_code == 201, joined.text
        me = joined.json()
        pt = bearer(me["token"])
        assert (await client.post("/api/studies/participants/me/consent", headers=pt)).is_success
        r = await client.post(
            f"/api/conversations/{me['thread_id']}/turns",
            json={"content": "objective: a long plan " + "word " * 200},
            headers=pt,
        )
        assert r.status_code == 200 and "turn_completed" in r.text, r.text
        assert (await client.post("/api/studies/participants/me/finish", headers=pt)).is_success
        events = await watching

        seen = types(events)
        assert seen[0] == study_events.JOINED
        assert seen.index(study_events.CONSENTED) < seen.index("chat/turnStarted")
        assert seen.index("chat/turnComplete") < seen.index(study_events.FINISHED)
        assert "chat/delta" not in seen  # streamed text stays out
        join = events[0][1]
        assert join["channel"] == study_events.study_channel(study.id)
        assert join["action"] | {"studyId": None} == {
            "type": study_events.JOINED,
            "studyId": None,
            "participant": "P001",
            "condition": "graph",
            "threadId": me["thread_id"],
        }
        seqs = [e["serverSeq"] for _, e in events]
        assert seqs == sorted(seqs)

        # A reconnect after the join resumes there: the join is not sent again.
        again = await follow(
            base, path, study.owner_h, ends_with(study_events.FINISHED), after=join["serverSeq"]
        )
        assert types(again) == seen[1:]
        assert [e["serverSeq"] for _, e in again] == seqs[1:]


async def test_a_member_removed_while_following_sees_the_stream_end(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A member's stream asks again every `RECHECK_SECONDS` (two, at most five); here
    # every 0.2 s, rather than wait for the server's period.
    assert 0 < study_events.RECHECK_SECONDS <= 5
    monkeypatch.setattr(study_events, "RECHECK_SECONDS", 0.2)
    study = await new_study(app, "graph")
    viewer = await add_member(app, study, "viewer")
    path = f"/api/studies/{study.id}/events"
    async with live_server(app) as base:
        ready = asyncio.Event()
        watching = asyncio.create_task(follow(base, path, viewer, errored, ready=ready))
        await ready.wait()
        joined = await client.post("/api/studies/join", json={"token": study.tokens[1]})
        assert joined.status_code == 201
        await asyncio.sleep(0.3)
        async with db_of(app).transaction() as s:
            await s.execute(delete(StudyMember).where(StudyMember.study_id == study.id))
        events = await watching
    assert types(events) == [study_events.JOINED]
    assert events[-1] == ("error", {"code": "not_found", "message": "no such study"})


async def test_a_gap_the_log_no_longer_holds_starts_with_a_resync(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    study = await new_study(app, "graph")
    for _ in range(3):
        joined = await client.post("/api/studies/join", json={"token": study.tokens[1]})
        assert joined.status_code == 201
    db = db_of(app)
    async with db.read() as s:
        _, newest = await action_log.bounds(s)
    async with db.transaction() as s:  # the janitor pruned all but the newest entry
        await s.execute(delete(ActionLogEntry).where(ActionLogEntry.seq < newest))
    path = f"/api/studies/{study.id}/events"
    async with live_server(app) as base:
        ready = asyncio.Event()
        watching = asyncio.create_task(
            follow(base, path, study.owner_h, lambda e: len(e) >= 2, after=1, ready=ready)
        )
        await ready.wait()
        joined = await client.post("/api/studies/join", json={"token": study.tokens[1]})
        events = await watching
    # The table read after the resync holds everything up to `newest`; then live.
    assert [e["action"]["type"] for _, e in events] == [study_events.RESYNC, study_events.JOINED]
    assert events[0][1]["serverSeq"] == newest < events[1][1]["serverSeq"]
    assert events[1][1]["action"]["threadId"] == joined.json()["thread_id"]


async def test_a_join_whose_action_cannot_be_logged_leaves_nothing(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    study = await new_study(app, "graph")

    async def broken(*_: Any, **__: Any) -> None:
        raise RuntimeError("the log is gone")

    async def counts() -> tuple[Any, Any]:
        async with db_of(app).read() as s:
            people = await s.execute(
                select(func.count()).where(StudyParticipant.study_id == study.id)
            )
            families = await s.execute(select(func.count()).select_from(Conversation))
            return people.scalar(), families.scalar()

    before = await counts()
    # The join's only append: its batch's rows (each family's `created`, its join).
    monkeypatch.setattr(action_log, "append_rows", broken)
    refused = await client.post("/api/studies/join", json={"token": study.tokens[1]})
    assert refused.status_code == 500
    assert await counts() == before == (0, before[1])
