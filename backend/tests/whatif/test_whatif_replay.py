"""Replay jobs through the public API, on SQLite and PostgreSQL: the same user messages
in order on new branches, the workspace rebuilt, replies that differ from the
default's, provenance naming the profile, progress on the family's event stream,
validation up front, cancel, the per-user limit, ownership, and waiting for a busy
family."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.models import ActionLogEntry, Job
from haico.services.access import users
from haico.services.families import conversations
from tests.helpers import db_of
from tests.history_helpers import new_thread, turn_ok
from tests.whatif_helpers import API, make_profile, node, wait_job

STEPS = ["objective: plan a trip; todo: book", "how are we doing?", "todo: pack; write: Day one."]


async def _path(client: httpx.AsyncClient) -> str:
    tid = await new_thread(client)
    for content in STEPS:
        await turn_ok(client, tid, content)
    return tid


async def replay(
    client: httpx.AsyncClient, tid: str, a: str, b: str, profile_id: str, **extra: Any
) -> httpx.Response:
    body = {"from_node": a, "to_node": b, "profile_id": profile_id, **extra}
    return await client.post(f"{API}/{tid}/replay", json=body)


async def _until_active(client: httpx.AsyncClient, tid: str) -> None:
    for _ in range(200):
        if (await client.get(f"{API}/{tid}/history")).json()["active_turn"]:
            return
        await asyncio.sleep(0.02)
    raise AssertionError("no turn became active")


async def _user_messages(client: httpx.AsyncClient, tid: str) -> list[str]:
    msgs = (await client.get(f"{API}/{tid}/messages")).json()
    return [m["content"] for m in msgs if m["role"] == "user"]


async def test_replay_rebuilds_the_path_with_the_profile(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await _path(client)
    p = await make_profile(client, name="pilot", params={"seed": 1}, instructions="Be a pilot.")
    r = await replay(client, tid, f"{tid}:1", f"{tid}:3", p["id"], repeats=2)
    assert r.status_code == 202, r.text
    job = r.json()
    assert job["kind"] == "replay" and job["state"] in ("queued", "running")
    assert job["progress"] == {"done": 0, "total": 6}
    job = await wait_job(client, job["id"])
    assert job["progress"] == {"done": 6, "total": 6} and job["error"] is None
    assert len(job["thread_ids"]) == 2

    original_ws = (await client.get(f"{API}/{tid}/workspace")).json()
    for i, branch in enumerate(job["thread_ids"], start=1):
        conv = (await client.get(f"{API}/{branch}")).json()
        assert conv["branch_point_turn"] == 0  # at from_node's parent: the start
        assert conv["reason"] == f"replay with pilot of turns 1–3 ({i}/2)"
        assert conv["profile_id"] == p["id"]
        # the same user messages, in order
        assert await _user_messages(client, branch) == STEPS
        # the workspace rebuilt by the replayed commands
        ws = (await client.get(f"{API}/{branch}/workspace")).json()
        assert ws["objective"] == original_ws["objective"] == "plan a trip"
        assert [t["text"] for t in ws["todos"]] == ["book", "pack"]
        assert ws["document"]["content"] == original_ws["document"]["content"]
        for k in (1, 2, 3):
            mine, theirs = await node(client, branch, k), await node(client, tid, k)
            assert mine["provenance"]["profile_id"] == p["id"]
            assert mine["provenance"]["profile_name"] == "pilot"
            assert mine["reply"] != theirs["reply"]  # the default profile's words differ
            assert mine["reply"].startswith("A quick check-in. (seed 1) [Be a pilot.]")
            assert theirs["provenance"]["profile_id"] == "default"

    # The replayed steps' workspace changes are on the record as the replay's; the
    # original path's stay the agent's.
    edits = (await client.get(f"{API}/{tid}/edits")).json()
    by_thread: dict[str, set[str]] = {}
    for e in edits:
        by_thread.setdefault(e["node_id"].rsplit(":", 1)[0], set()).add(e["origin"])
    assert by_thread[tid] == {"agent"}, by_thread
    for branch in job["thread_ids"]:
        assert by_thread[branch] == {"replay"}, by_thread

    # the family's event stream carried the progress, ending with the done job
    async with db_of(app).read() as s:
        logged = (
            (await s.execute(select(ActionLogEntry.action).order_by(ActionLogEntry.seq)))
            .scalars()
            .all()
        )
    schema = json.loads(
        (
            Path(__file__).parents[2] / "haico/events/schemas/haico-jobProgress.schema.json"
        ).read_text()
    )
    for action in logged:
        if action.get("type") == "haico/jobProgress":
            jsonschema.validate(action, schema)
    progress = [a["job"] for a in logged if a.get("type") == "haico/jobProgress"]
    ours = [j for j in progress if j["id"] == job["id"]]
    assert [j["progress"]["done"] for j in ours if j["state"] == "running"][-1] == 6
    assert ours[-1]["state"] == "done" and ours[-1]["thread_ids"] == job["thread_ids"]
    # the graph shows the replayed branches
    graph = (await client.get(f"{API}/{tid}/graph")).json()
    assert {t["thread_id"] for t in graph["threads"]} >= set(job["thread_ids"])
    listed = (await client.get(f"{API}/{tid}/jobs")).json()
    assert [j["id"] for j in listed] == [job["id"]]


async def test_try_n_alternatives_of_one_step(client: httpx.AsyncClient) -> None:
    tid = await _path(client)
    r = await replay(client, tid, f"{tid}:2", f"{tid}:2", "default", repeats=3)
    job = await wait_job(client, r.json()["id"])
    assert len(job["thread_ids"]) == 3
    for branch in job["thread_ids"]:
        conv = (await client.get(f"{API}/{branch}")).json()
        # siblings of node 2: branched at node 1, one answer to the same message
        assert conv["parent_thread_id"] == tid and conv["branch_point_turn"] == 1
        assert conv["turn_index"] == 2
        assert (await _user_messages(client, branch))[-1] == STEPS[1]


async def test_bad_ranges_answer_up_front(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await _path(client)
    side = (await client.post(f"{API}/{tid}/branch", json={"from_turn": 1})).json()["thread_id"]
    await turn_ok(client, side, "todo: other")
    # to_node not a descendant of from_node
    r = await replay(client, tid, f"{tid}:3", f"{tid}:2", "default")
    assert r.status_code == 422 and "does not descend" in r.json()["message"]
    r = await replay(client, tid, f"{tid}:2", f"{side}:2", "default")
    assert r.status_code == 422
    # a foreign node: 403; an unknown node: 404; bad shapes and repeats: 422
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    r = await replay(client, tid, f"{foreign.thread_id}:1", f"{tid}:2", "default")
    assert r.status_code == 403
    r = await replay(client, foreign.thread_id, f"{tid}:1", f"{tid}:2", "default")
    assert r.status_code == 403
    r = await replay(client, tid, f"{tid}:1", f"{tid}:9", "default")
    assert r.status_code == 404
    assert (await replay(client, tid, "nope", f"{tid}:2", "default")).status_code == 422
    r = await replay(client, tid, f"{tid}:1", f"{tid}:2", "default", repeats=6)
    assert r.status_code == 422
    r = await replay(client, tid, f"{tid}:1", f"{tid}:2", "pr_unknown")
    assert r.status_code == 404
    # nothing was built
    async with db_of(app).read() as s:
        jobs = await s.execute(select(Job).where(Job.root_thread_id == tid))
        assert jobs.scalars().all() == []
    graph = (await client.get(f"{API}/{tid}/graph")).json()
    assert len(graph["threads"]) == 2


async def test_jobs_are_their_owners(app: FastAPI, client: httpx.AsyncClient) -> None:
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    async with db_of(app).transaction() as s:
        s.add(
            Job(
                id="job_theirs",
                user_id=stranger.id,
                root_thread_id="th_" + "0" * 32,
                kind="replay",
                state="done",
                spec={},
                done=1,
                total=1,
                thread_ids=[],
            )
        )
    # Of a family the caller cannot read: as no job at all.
    assert (await client.get("/api/jobs/job_theirs")).status_code == 404
    assert (await client.post("/api/jobs/job_theirs/cancel")).status_code == 404
    assert (await client.get("/api/jobs/job_nothing")).status_code == 404
    assert (await client.post("/api/jobs/job_nothing/cancel")).status_code == 404


async def test_cancel_mid_job_keeps_what_it_built(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "todo: one")
    # a slow step, cancelled on the original path (its message stays, to replay)
    slow = asyncio.create_task(client.post(f"{API}/{tid}/turns", json={"content": "wait: 20"}))
    await _until_active(client, tid)
    assert (await client.post(f"{API}/{tid}/turns/cancel")).status_code == 200
    await slow
    r = await replay(client, tid, f"{tid}:1", f"{tid}:2", "default")
    job = r.json()
    for _ in range(200):  # until the replay's slow step runs
        job = (await client.get(f"/api/jobs/{job['id']}")).json()
        if job["progress"]["done"] == 1:
            break
        await asyncio.sleep(0.05)
    assert job["progress"]["done"] == 1
    await asyncio.sleep(0.3)
    r = await client.post(f"/api/jobs/{job['id']}/cancel")
    assert r.status_code == 200 and r.json()["state"] == "cancelled"
    branch = r.json()["thread_ids"][0]
    assert (await node(client, branch, 1))["state"] == "complete"
    assert (await node(client, branch, 2))["state"] == "cancelled"
    assert (await client.get(f"{API}/{tid}/history")).json()["active_turn"] is None
    # an ended job stays as it ended
    again = await client.post(f"/api/jobs/{job['id']}/cancel")
    assert again.json()["state"] == "cancelled" and again.json()["progress"]["done"] == 1


async def test_limit_per_user_and_a_busy_family_waits(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    app.state.settings.replay_jobs_per_user = 1
    tid = await new_thread(client)
    await turn_ok(client, tid, "todo: one")
    # the researcher's own slow turn holds the family ...
    own = asyncio.create_task(client.post(f"{API}/{tid}/turns", json={"content": "wait: 1.5"}))
    await _until_active(client, tid)
    r = await replay(client, tid, f"{tid}:1", f"{tid}:1", "default")
    assert r.status_code == 202
    job = r.json()
    # ... a second job for the same user is refused while the first is active
    r = await replay(client, tid, f"{tid}:1", f"{tid}:1", "default")
    assert r.status_code == 429 and r.json()["code"] == "too_many_jobs"
    await asyncio.sleep(0.3)
    assert (await client.get(f"/api/jobs/{job['id']}")).json()["progress"]["done"] == 0
    assert (await own).status_code == 200  # the researcher's turn was never disturbed
    job = await wait_job(client, job["id"])
    assert job["progress"]["done"] == 1
    assert (await node(client, tid, 2))["state"] == "complete"


async def test_two_simultaneous_replays_cannot_both_take_the_last_slot(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The limit holds for requests that arrive together: both are let through their
    checks of the range and the profile before either adds its job (a barrier between
    the two), and with one slot one answers 202 and the other 429."""
    app.state.settings.replay_jobs_per_user = 1
    tid = await new_thread(client)
    await turn_ok(client, tid, "todo: one")
    # the researcher's slow turn holds the family: the job that gets the slot stays active
    own = asyncio.create_task(client.post(f"{API}/{tid}/turns", json={"content": "wait: 1.5"}))
    await _until_active(client, tid)
    runtime = app.state.handles.runtime
    transcript = runtime.messages
    both = asyncio.Barrier(2)
    arrived = 0

    async def together(thread_id: str) -> Any:
        nonlocal arrived
        arrived += 1
        if arrived <= 2:
            await asyncio.wait_for(both.wait(), timeout=10)
        return await transcript(thread_id)

    monkeypatch.setattr(runtime, "messages", together)
    answers = await asyncio.gather(
        *(replay(client, tid, f"{tid}:1", f"{tid}:1", "default") for _ in range(2))
    )
    assert sorted(r.status_code for r in answers) == [202, 429], [r.text for r in answers]
    taken, refused = sorted(answers, key=lambda r: r.status_code)
    assert refused.json()["code"] == "too_many_jobs"
    jobs = (await client.get(f"{API}/{tid}/jobs")).json()
    assert [j["id"] for j in jobs] == [taken.json()["id"]]
    assert (await own).status_code == 200
    assert (await wait_job(client, jobs[0]["id"]))["progress"]["done"] == 1


async def test_a_failure_mid_job_fails_it_and_keeps_the_branch(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from haico.services.whatif import replay as replay_service

    tid = await _path(client)
    p = await make_profile(client, name="seeded", params={"seed": 2})

    async def broken(*args: Any, **kwargs: Any) -> None:
        raise RuntimeError("injected: setting the branch's profile failed")

    monkeypatch.setattr(replay_service.profiles, "set_branch_profile", broken)
    r = await replay(client, tid, f"{tid}:1", f"{tid}:3", p["id"])
    job = await wait_job(client, r.json()["id"], states=("failed",))
    assert job["error"] == "injected: setting the branch's profile failed"
    assert job["progress"]["done"] == 0
    (branch,) = job["thread_ids"]  # listed, and still there
    conv = (await client.get(f"{API}/{branch}")).json()
    assert conv["reason"].startswith("replay with seeded") and conv["turn_index"] == 0
    # the family is free: the researcher goes on
    await turn_ok(client, tid, "todo: more")
