"""Retention of off-path branches and the janitor's sweeps, on both backends.

The policy covers every family in the database, and the Postgres test database is
shared by the whole session, so each test looks at its own family's results only.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select, update

from haico.db.models import ActionLogEntry, Conversation, ConversationBranch
from haico.domain import now
from haico.services.maintenance import consistency
from haico.wiring import janitor
from tests.helpers import db_of
from tests.history_helpers import live_server
from tests.sse_client import send_turn


async def _family(client: httpx.AsyncClient) -> tuple[str, str, str]:
    """Root with 4 turns, branch b1 at 2 and branch b2 at 3, each with one turn of its own;
    then the head goes back to the root's tip, so both branches are off the path."""
    root = (await client.post("/api/conversations", json={})).json()["thread_id"]
    for i in range(4):
        await send_turn(client, root, f"objective: r{i + 1}")
    b1 = (await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 2})).json()
    await send_turn(client, b1["thread_id"], "objective: b1")
    b2 = (await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 3})).json()
    await send_turn(client, b2["thread_id"], "objective: b2")
    r = await client.post(f"/api/conversations/{root}/checkout", json={"turn_id": f"{root}:4"})
    assert r.status_code == 200 and r.json()["working_thread_id"] == root
    return root, b1["thread_id"], b2["thread_id"]


async def _assert_consistent(app: FastAPI, *roots: str) -> None:
    """`haico check`'s rules pass on these families after the janitor (the session's
    PostgreSQL database is shared, so only the test's own families are checked)."""
    report = await consistency.check(db_of(app), None, max_age_seconds=600, roots=set(roots))
    assert report.families == len(roots) and report.problems == []


async def _node_ids(client: httpx.AsyncClient, thread_id: str) -> set[str]:
    graph = (await client.get(f"/api/conversations/{thread_id}/graph")).json()
    return {n["id"] for n in graph["nodes"]}


async def _pruned_actions(app: FastAPI, root: str) -> list[list[str]]:
    async with db_of(app).read() as s:
        rows = (
            await s.execute(
                select(ActionLogEntry.action)
                .where(ActionLogEntry.root_thread_id == root)
                .order_by(ActionLogEntry.seq)
            )
        ).scalars()
        return [a["turnIds"] for a in rows if a.get("type") == "chat/turnsPruned"]


class TestCountPolicy:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"retention_max_branches": 1}

    async def test_surplus_branch_is_pruned_and_published(
        self, app: FastAPI, client: httpx.AsyncClient
    ) -> None:
        root, b1, b2 = await _family(client)
        runtime = app.state.runtime
        assert await runtime.raw_messages(b1) != []
        report = await janitor.run_once(
            db_of(app), runtime, max_age_seconds=600, settings=app.state.settings
        )
        assert report.pruned_turn_ids[root] == [f"{b1}:3"]
        await _assert_consistent(app, root)
        nodes = await _node_ids(client, root)
        assert f"{b1}:3" not in nodes and f"{b2}:4" in nodes
        assert {f"{root}:{k}" for k in range(1, 5)} <= nodes
        assert await _pruned_actions(app, root) == [[f"{b1}:3"]]
        async with db_of(app).read() as s:
            assert await s.get(Conversation, b1) is None
        assert await runtime.raw_messages(b1) == []
        # running again finds nothing more to do
        again = await janitor.run_once(
            db_of(app), runtime, max_age_seconds=600, settings=app.state.settings
        )
        assert root not in again.pruned_turn_ids

    async def test_fork_referenced_node_is_never_pruned(
        self, app: FastAPI, client: httpx.AsyncClient
    ) -> None:
        root, b1, _ = await _family(client)
        r = await client.post(f"/api/conversations/{b1}/fork", json={"from_turn": 3})
        assert r.status_code == 201
        report = await janitor.run_once(
            db_of(app), app.state.runtime, max_age_seconds=600, settings=app.state.settings
        )
        assert root not in report.pruned_turn_ids
        assert f"{b1}:3" in await _node_ids(client, root)
        await _assert_consistent(app, root)


class TestAgePolicy:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"retention_max_age_days": 7}

    async def test_old_branch_is_pruned_recent_one_kept(
        self, app: FastAPI, client: httpx.AsyncClient
    ) -> None:
        root, b1, b2 = await _family(client)
        async with db_of(app).transaction() as s:
            await s.execute(
                update(Conversation)
                .where(Conversation.thread_id == b2)
                .values(updated_at=now() - timedelta(days=10))
            )
        report = await janitor.run_once(
            db_of(app), app.state.runtime, max_age_seconds=600, settings=app.state.settings
        )
        assert report.pruned_turn_ids[root] == [f"{b2}:4"]
        await _assert_consistent(app, root)
        nodes = await _node_ids(client, root)
        assert f"{b1}:3" in nodes and f"{b2}:4" not in nodes


async def test_no_policy_prunes_nothing(app: FastAPI, client: httpx.AsyncClient) -> None:
    root, b1, b2 = await _family(client)
    report = await janitor.run_once(
        db_of(app), app.state.runtime, max_age_seconds=600, settings=app.state.settings
    )
    assert root not in report.pruned_turn_ids
    assert {f"{b1}:3", f"{b2}:4"} <= await _node_ids(client, root)
    await _assert_consistent(app, root)


async def test_janitor_drops_orphan_drafts_but_keeps_the_working_one(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    root = (await client.post("/api/conversations", json={})).json()["thread_id"]
    for i in range(3):
        await send_turn(client, root, f"objective: r{i + 1}")
    r = await client.post(f"/api/conversations/{root}/checkout", json={"turn_id": f"{root}:1"})
    draft = r.json()["working_thread_id"]
    assert draft != root
    # A crash could leave a draft that no family points at any more: fake one.
    async with db_of(app).transaction() as s:
        src = await s.get(Conversation, root)
        assert src is not None
        orphan = "th_" + "f" * 32
        s.add(
            Conversation(
                thread_id=orphan,
                user_id=src.user_id,
                root_thread_id=root,
                title="x",
                turn_index=1,
                created_at=now(),
                updated_at=now(),
            )
        )
        await s.flush()
        s.add(
            ConversationBranch(
                thread_id=orphan, parent_thread_id=root, branch_point_turn=1, status="draft"
            )
        )
    before = await consistency.check(db_of(app), None, max_age_seconds=600, roots={root})
    assert [(p.kind, p.thread_id) for p in before.problems] == [("orphan_draft", orphan)]
    report = await janitor.run_once(db_of(app), app.state.runtime, max_age_seconds=600)
    await _assert_consistent(app, root)
    assert orphan in report.orphan_drafts and draft not in report.orphan_drafts
    async with db_of(app).read() as s:
        assert await s.get(Conversation, orphan) is None
        assert await s.get(Conversation, draft) is not None


async def test_janitor_trims_the_action_log_window(app: FastAPI, client: httpx.AsyncClient) -> None:
    root = (await client.post("/api/conversations", json={})).json()["thread_id"]
    await send_turn(client, root, "objective: x")
    async with db_of(app).transaction() as s:
        # Time ages a prefix of the log: everything up to this family's last action.
        newest = await s.scalar(
            select(func.max(ActionLogEntry.seq)).where(ActionLogEntry.root_thread_id == root)
        )
        await s.execute(
            update(ActionLogEntry)
            .where(ActionLogEntry.seq <= newest)
            .values(created_at=now() - timedelta(days=30))
        )
        before = await s.scalar(select(func.count()).where(ActionLogEntry.root_thread_id == root))
    report = await janitor.run_once(
        db_of(app), app.state.runtime, max_age_seconds=600, settings=app.state.settings
    )
    assert report.log_entries_dropped >= int(before or 0) - 1 > 0
    # a reconnect from before the window gets a resync action first
    async with (
        live_server(app) as base,
        httpx.AsyncClient(base_url=base, timeout=10) as c,
        c.stream("GET", f"/api/conversations/{root}/events?after=1") as r,
    ):
        first = ""
        async for chunk in r.aiter_text():
            first += chunk
            if "\n\n" in first:
                break
    assert first.startswith("event: action")
    data = json.loads(first.split("data: ", 1)[1].split("\n", 1)[0])
    assert data["action"]["type"] == "haico/resync"
    assert data["action"]["history"]["head_turn_id"] == f"{root}:1"
