"""Big trees through the REST API, on both backends: archive and unarchive, the list
and the graph with archived branches, retention beside them, pruning suggestions, the
chosen path, and a node cap that never hides the displayed path."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import update

from haico.db.models import Conversation
from haico.domain import now
from haico.services.access import users
from haico.services.families import conversations
from haico.wiring import janitor
from tests.helpers import db_of
from tests.history_helpers import checkout, history, new_thread, turn_ok


async def branch(client: httpx.AsyncClient, thread_id: str, at: int, *turns: str) -> str:
    r = await client.post(f"/api/conversations/{thread_id}/branch", json={"from_turn": at})
    assert r.status_code == 201, r.text
    tid = str(r.json()["thread_id"])
    for content in turns:
        await turn_ok(client, tid, content)
    return tid


async def root_with(client: httpx.AsyncClient, *turns: str) -> str:
    tid = await new_thread(client)
    for content in turns:
        await turn_ok(client, tid, content)
    return tid


async def listed(client: httpx.AsyncClient, **params: Any) -> dict[str, dict[str, Any]]:
    r = await client.get("/api/conversations", params=params)
    assert r.status_code == 200, r.text
    return {c["thread_id"]: c for c in r.json()}


async def graph(client: httpx.AsyncClient, thread_id: str) -> dict[str, Any]:
    r = await client.get(f"/api/conversations/{thread_id}/graph")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def archive(client: httpx.AsyncClient, thread_id: str, on: bool = True) -> dict[str, Any]:
    r = await client.patch(f"/api/conversations/{thread_id}", json={"archived": on})
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_archive_hides_a_branch_and_its_descendants_and_unarchive_undoes_it(
    client: httpx.AsyncClient,
) -> None:
    root = await root_with(client, "objective: r1", "objective: r2", "objective: r3")
    b1 = await branch(client, root, 2, "todo: b1")
    b2 = await branch(client, b1, 3, "todo: b2")
    before = await graph(client, root)

    assert (await archive(client, b1))["archived"] is True
    shown = await listed(client)
    assert root in shown and b1 not in shown and b2 not in shown
    everything = await listed(client, archived="true")
    assert everything[b1]["archived"] and everything[b2]["archived"]
    assert not everything[root]["archived"]
    # Below an archived branch, a thread reads as archived too; nothing was deleted.
    assert (await client.get(f"/api/conversations/{b2}")).json()["archived"] is True
    after = await graph(client, root)
    flags = {t["thread_id"]: t["archived"] for t in after["threads"]}
    assert flags == {root: False, b1: True, b2: True}
    assert {n["id"] for n in after["nodes"]} == {n["id"] for n in before["nodes"]}
    ws = await client.get(f"/api/conversations/{b2}/workspace")
    assert [t["text"] for t in ws.json()["todos"]] == ["b1", "b2"]

    assert (await archive(client, b1, on=False))["archived"] is False
    assert {root, b1, b2} <= set(await listed(client))
    assert not any(t["archived"] for t in (await graph(client, root))["threads"])


async def test_archive_checks_ownership(app: FastAPI, client: httpx.AsyncClient) -> None:
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    theirs = await conversations.create(db_of(app), principal=stranger, title="theirs")
    r = await client.patch(f"/api/conversations/{theirs.thread_id}", json={"archived": True})
    assert r.status_code == 403
    missing = f"th_{uuid.uuid4().hex}"
    assert (
        await client.patch(f"/api/conversations/{missing}", json={"archived": True})
    ).status_code == 404
    r = await client.patch(f"/api/conversations/{theirs.thread_id}", json={"archived": "yes"})
    assert r.status_code == 422
    async with db_of(app).read() as s:
        row = await s.get(Conversation, theirs.thread_id)
        assert row is not None and row.archived_at is None


class TestRetentionKeepsArchived:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"retention_max_branches": 0}

    async def test_archived_branch_survives_retention(
        self, app: FastAPI, client: httpx.AsyncClient
    ) -> None:
        root = await root_with(client, "objective: r1", "objective: r2", "objective: r3")
        kept = await branch(client, root, 1, "todo: kept")
        doomed = await branch(client, root, 2, "todo: doomed")
        r = await checkout(client, root, f"{root}:3")
        assert r.status_code == 200, r.text
        await archive(client, kept)
        report = await janitor.run_once(
            db_of(app), app.state.runtime, max_age_seconds=600, settings=app.state.settings
        )
        assert report.pruned_turn_ids[root] == [f"{doomed}:3"]
        nodes = {n["id"] for n in (await graph(client, root))["nodes"]}
        assert f"{kept}:2" in nodes and f"{doomed}:3" not in nodes
        # Unarchived, it is an ordinary branch again: the next run prunes it.
        await archive(client, kept, on=False)
        again = await janitor.run_once(
            db_of(app), app.state.runtime, max_age_seconds=600, settings=app.state.settings
        )
        assert again.pruned_turn_ids[root] == [f"{kept}:2"]


async def test_each_suggestion_reason(app: FastAPI, client: httpx.AsyncClient) -> None:
    root = await root_with(client, "objective: r1", "objective: r2")
    first = await branch(client, root, 2, "todo: same", "todo: more")
    twin = await branch(client, root, 2, "todo: same; todo: more")
    other = await branch(client, root, 2, "todo: different")
    idle = await branch(client, root, 1, "objective: idle")
    talk = await branch(client, root, 2, "hello there", "how are you")
    r = await checkout(client, root, f"{root}:2")
    assert r.status_code == 200, r.text
    async with db_of(app).transaction() as s:
        await s.execute(
            update(Conversation)
            .where(Conversation.thread_id == idle)
            .values(updated_at=now() - timedelta(days=30))
        )

    r = await client.get(f"/api/conversations/{root}/suggestions")
    assert r.status_code == 200, r.text
    got = {(x["thread_id"], x["reason"]): x["detail"] for x in r.json()}
    assert set(got) == {(twin, "same_as_sibling"), (idle, "idle"), (talk, "no_workspace_change")}
    assert "+2 todos" in got[(twin, "same_as_sibling")]
    assert "30 days" in got[(idle, "idle")]
    assert "2 turns" in got[(talk, "no_workspace_change")]
    assert first not in {t for t, _ in got} and other not in {t for t, _ in got}

    # The branch on the working path is never suggested: now its older twin is.
    r = await checkout(client, twin, f"{twin}:3")
    assert r.status_code == 200, r.text
    reasons = {
        (x["thread_id"], x["reason"])
        for x in (await client.get(f"/api/conversations/{root}/suggestions")).json()
    }
    assert (first, "same_as_sibling") in reasons and (twin, "same_as_sibling") not in reasons
    # Archiving a suggested branch takes it off the list; unarchiving brings it back.
    await archive(client, talk)
    reasons = {
        (x["thread_id"], x["reason"])
        for x in (await client.get(f"/api/conversations/{root}/suggestions")).json()
    }
    assert (talk, "no_workspace_change") not in reasons
    await archive(client, talk, on=False)
    reasons = {
        (x["thread_id"], x["reason"])
        for x in (await client.get(f"/api/conversations/{root}/suggestions")).json()
    }
    assert (talk, "no_workspace_change") in reasons


async def test_chosen_path_is_remembered_per_user_for_every_client(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    root = await root_with(client, "objective: r1", "objective: r2")
    a = await branch(client, root, 1, "todo: a")
    b = await branch(client, root, 1, "todo: b")
    head = (await history(client, root))["head_turn_id"]
    fresh = (await client.get(f"/api/conversations/{root}/chosen-path")).json()
    assert fresh == {"root_thread_id": root, "node_id": None, "choices": []}

    r = await client.put(f"/api/conversations/{a}/chosen-path", json={"node_id": f"{a}:2"})
    assert r.status_code == 200, r.text
    assert r.json()["node_id"] == f"{a}:2"
    assert r.json()["choices"] == [{"fork_node_id": f"{root}:1", "child_node_id": f"{a}:2"}]
    # Another browser (a new client of the same server) asks from any thread of the family.
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://other.test") as second:
        seen = (await second.get(f"/api/conversations/{b}/chosen-path")).json()
        assert seen["node_id"] == f"{a}:2"
        r = await second.put(f"/api/conversations/{root}/chosen-path", json={"node_id": f"{b}:2"})
        assert r.status_code == 200, r.text
    again = (await client.get(f"/api/conversations/{root}/chosen-path")).json()
    assert again["node_id"] == f"{b}:2"
    assert again["choices"] == [{"fork_node_id": f"{root}:1", "child_node_id": f"{b}:2"}]
    # A view, not a checkout: the head stays where it was.
    assert (await history(client, root))["head_turn_id"] == head
    # An archived choice is passed over: the walk down takes the oldest child left.
    await archive(client, b)
    assert (await client.get(f"/api/conversations/{root}/chosen-path")).json()[
        "node_id"
    ] == f"{root}:2"


async def test_chosen_path_refuses_foreign_and_unknown_nodes(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    root = await root_with(client, "objective: r1")
    elsewhere = await root_with(client, "objective: e1")
    for node in (f"{elsewhere}:1", f"{root}:9"):
        r = await client.put(f"/api/conversations/{root}/chosen-path", json={"node_id": node})
        assert r.status_code == 404, r.text
    r = await client.put(f"/api/conversations/{root}/chosen-path", json={"node_id": "nope"})
    assert r.status_code == 422
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    theirs = await conversations.create(db_of(app), principal=stranger, title="theirs")
    assert (
        await client.get(f"/api/conversations/{theirs.thread_id}/chosen-path")
    ).status_code == 403
    assert (
        await client.get(f"/api/conversations/{theirs.thread_id}/suggestions")
    ).status_code == 403


class TestCapKeepsThePath:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"graph_node_cap": 3}

    async def test_displayed_path_is_complete_past_the_cap(self, client: httpx.AsyncClient) -> None:
        root = await root_with(client, *(f"objective: r{k}" for k in range(1, 6)))
        side = await branch(client, root, 1, "todo: s1", "todo: s2", "todo: s3")
        body = await graph(client, root)
        ids = {n["id"] for n in body["nodes"]}
        # The newest three are the side branch's, the path brings the rest: nothing is
        # left out, so the answer is not truncated although it passes the cap.
        assert body["truncated"] is False
        assert {f"{root}:{k}" for k in range(1, 6)} <= ids
        # Beyond the path, the newest nodes (the side branch's), and no edge dangles.
        extra = ids - {f"{root}:{k}" for k in range(1, 6)}
        assert extra and extra <= {f"{side}:{k}" for k in range(2, 5)} and f"{side}:4" in extra
        assert all(e["source"] in ids and e["target"] in ids for e in body["edges"])
        on_path = {n["id"] for n in body["nodes"] if n["is_on_active_path"]}
        assert on_path == {f"{root}:{k}" for k in range(1, 6)}
        # Asked for the side branch, its own path is the complete one.
        body = await graph(client, side)
        assert {f"{root}:1", *(f"{side}:{k}" for k in range(2, 5))} == {
            n["id"] for n in body["nodes"]
        }
        assert body["truncated"] is True  # r:2-5 are left out
