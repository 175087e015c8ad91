"""The janitor reclaims orphan checkpoints (transcripts of threads with no row), on
both databases, and leaves every live thread's transcript alone.

Each test has its own database (`server_env`), so the whole-database check (which
is what finds orphan checkpoints) sees only what the test made.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from langchain_core.messages import HumanMessage
from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent import checkpoint_threads
from haico.agent.checkpointer import CheckpointStore
from haico.agent.runtime import AgentRuntime
from haico.db.models import Conversation
from haico.db.repositories import consistency as consistency_repo
from haico.db.repositories import threads as threads_repo
from haico.domain import BranchStatus
from haico.services.maintenance import consistency
from haico.wiring import janitor
from tests.helpers import add_branch_row, db_of, run_cli
from tests.history_helpers import checkout, new_thread, thread_with_turns, turn_ok
from tests.maintenance.test_backup_check import _check, _in_process


def _runtime(app: FastAPI) -> AgentRuntime:
    runtime: AgentRuntime = app.state.runtime
    return runtime


def _store(app: FastAPI) -> CheckpointStore:
    store = _runtime(app).store
    assert store is not None
    return store


async def _janitor(app: FastAPI) -> janitor.JanitorReport:
    return await janitor.run_once(
        db_of(app), _runtime(app), max_age_seconds=600, settings=app.state.settings
    )


async def _problems(app: FastAPI) -> list[tuple[str, str | None]]:
    """`haico check`'s problems over the whole database, the checkpointer included."""
    report = await consistency.check(db_of(app), _store(app), max_age_seconds=600)
    return [(p.kind, p.thread_id) for p in report.problems]


async def _orphan(app: FastAPI, client: httpx.AsyncClient) -> str:
    """A conversation with two turns whose rows are then deleted and its checkpoints
    kept: what a crash between a deletion's two steps leaves."""
    thread_id = await thread_with_turns(client, 2)
    async with db_of(app).transaction() as s:
        await threads_repo.delete_thread_rows(s, thread_id)
    assert await _runtime(app).messages(thread_id) != []
    return thread_id


async def test_janitor_removes_an_orphan_checkpoint(server_env: dict[str, str]) -> None:
    async with _in_process(server_env) as (app, c):
        kept = await thread_with_turns(c, 2)
        orphan = await _orphan(app, c)
        assert await _problems(app) == [("orphan_checkpoint", orphan)]
        report = await _janitor(app)
        assert report.orphan_checkpoints == [orphan]
        assert report.checkpoint_failures == [] and report.removed == []
        assert await _runtime(app).messages(orphan) == []
        assert orphan not in await checkpoint_threads.thread_ids(_store(app))
        assert await _runtime(app).messages(kept) != []
        assert await _problems(app) == []
        assert (await _janitor(app)).orphan_checkpoints == []


async def _messages(c: httpx.AsyncClient, thread_id: str) -> Any:
    r = await c.get(f"/api/conversations/{thread_id}/messages")
    assert r.status_code == 200, r.text
    return r.json()


async def _live_threads(app: FastAPI, c: httpx.AsyncClient) -> dict[str, Any]:
    """Threads that own checkpoints or read their parent's, each with what it answers:
    a family with a branch, now on a restored draft (a checkout to an interior node),
    a soft-deleted family, and a young pending branch whose transcript is seeded but
    which is not active yet (a branch between its phases 2 and 3)."""
    runtime = _runtime(app)
    root = await thread_with_turns(c, 3)
    r = await c.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
    assert r.status_code == 201, r.text
    branch = r.json()["thread_id"]
    await turn_ok(c, branch, "objective: on the branch")
    r = await checkout(c, root, f"{root}:2")
    assert r.status_code == 200, r.text
    draft = r.json()["working_thread_id"]
    assert draft not in (root, branch)
    deleted = await thread_with_turns(c, 2)
    assert (await c.delete(f"/api/conversations/{deleted}")).status_code == 204
    pending = await add_branch_row(db_of(app), root, BranchStatus.PENDING)
    await runtime.seed(thread_id=pending, messages=[HumanMessage("seeded")], metadata={})
    answers: dict[str, Any] = {t: await runtime.messages(t) for t in (root, branch, deleted)}
    answers[pending] = await runtime.messages(pending)
    for t in (root, branch, draft):
        answers[f"api {t}"] = await _messages(c, t)
    assert all(answers.values())
    # The draft shows its parent's transcript through turn 2.
    assert [m["turn_index"] for m in answers[f"api {draft}"]][-1] == 2
    return answers


async def _answers_now(app: FastAPI, c: httpx.AsyncClient, before: dict[str, Any]) -> None:
    for key, expected in before.items():
        if key.startswith("api "):
            assert await _messages(c, key.removeprefix("api ")) == expected, key
        else:
            assert await _runtime(app).messages(key) == expected, key


async def test_janitor_keeps_the_checkpoints_of_live_threads(
    server_env: dict[str, str],
) -> None:
    async with _in_process(server_env) as (app, c):
        before = await _live_threads(app, c)
        orphan = await _orphan(app, c)
        report = await _janitor(app)
        assert report.orphan_checkpoints == [orphan] and report.checkpoint_failures == []
        await _answers_now(app, c, before)
        assert await _problems(app) == []


async def test_a_row_missing_from_the_read_set_keeps_its_checkpoints(
    server_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A row committed after the janitor read the rows (a client-chosen id) is seen by
    the lookup just before the deletion: simulated by a row set that misses every row."""
    async with _in_process(server_env) as (app, c):
        before = await _live_threads(app, c)
        orphan = await _orphan(app, c)

        async def no_rows(s: AsyncSession) -> set[str]:
            return set()

        monkeypatch.setattr(consistency_repo, "thread_ids", no_rows)
        report = await _janitor(app)
        monkeypatch.undo()
        assert report.orphan_checkpoints == [orphan]
        await _answers_now(app, c, before)
        assert await _problems(app) == []


async def test_a_thread_created_during_the_run_is_never_an_orphan(
    server_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A thread whose row and transcript are written while the janitor reads the
    checkpointer's threads is in both sets it reads, so it is never even looked up as
    a candidate (checkpoints are read first, rows second)."""
    async with _in_process(server_env) as (app, c):
        orphan = await _orphan(app, c)
        read_checkpoints = checkpoint_threads.thread_ids
        looked_up: list[str] = []
        created: list[str] = []
        get_thread = threads_repo.get_thread

        async def spy(s: AsyncSession, thread_id: str) -> Conversation | None:
            looked_up.append(thread_id)
            return await get_thread(s, thread_id)

        async def create_then_read(store: CheckpointStore) -> set[str]:
            thread_id = await new_thread(c)
            await _runtime(app).seed(
                thread_id=thread_id, messages=[HumanMessage("new")], metadata={}
            )
            created.append(thread_id)
            monkeypatch.setattr(threads_repo, "get_thread", spy)
            return await read_checkpoints(store)

        monkeypatch.setattr(checkpoint_threads, "thread_ids", create_then_read)
        report = await _janitor(app)
        monkeypatch.undo()
        (new,) = created
        assert report.orphan_checkpoints == [orphan]
        assert new not in looked_up and orphan in looked_up
        assert await _runtime(app).messages(new) != []
        assert await _problems(app) == []


async def test_a_failed_delete_is_reported_and_retried(
    server_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _in_process(server_env) as (app, c):
        failing, other = sorted([await _orphan(app, c), await _orphan(app, c)])
        runtime = _runtime(app)
        delete_thread: Callable[[str], Awaitable[None]] = runtime.delete_thread

        async def flaky(thread_id: str) -> None:
            if thread_id == failing:
                raise RuntimeError("injected: the checkpointer is unreachable")
            await delete_thread(thread_id)

        monkeypatch.setattr(runtime, "delete_thread", flaky)
        first = await _janitor(app)
        monkeypatch.undo()
        # The failure came first (sorted ids) and the run went on to the next orphan.
        assert first.checkpoint_failures == [failing]
        assert first.orphan_checkpoints == [other]
        assert await runtime.messages(failing) != [] and await runtime.messages(other) == []
        assert await _problems(app) == [("orphan_checkpoint", failing)]
        second = await _janitor(app)
        assert second.orphan_checkpoints == [failing] and second.checkpoint_failures == []
        assert await runtime.messages(failing) == []
        assert await _problems(app) == []


async def test_cli_janitor_prints_the_orphan(server_env: dict[str, str]) -> None:
    async with _in_process(server_env) as (app, c):
        await thread_with_turns(c, 1)
        orphan = await _orphan(app, c)
    code, check = await asyncio.to_thread(_check, server_env)
    assert code == 1
    assert [(p["kind"], p["thread_id"]) for p in check["problems"]] == [
        ("orphan_checkpoint", orphan)
    ]
    out = await asyncio.to_thread(run_cli, server_env, "janitor")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    assert report["orphan_checkpoints"] == [orphan] and report["checkpoint_failures"] == []
    code, check = await asyncio.to_thread(_check, server_env)
    assert code == 0, check["problems"]
