"""The history graph of a family, through the REST API, on both storage backends.

The turn and branch services come later, so families are built directly in the
database: conversations sharing a root, branch rows, and one snapshot per owned turn.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event, update

from haico.db.dialect import execute_all
from haico.db.models import Artifact, Conversation, ConversationBranch, WorkspaceSnapshot
from haico.domain import NodeState, new_thread_id, now
from haico.services.access import users
from haico.services.workspace import snapshots
from tests.helpers import db_of

_clock = itertools.count()
_EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


def tick() -> datetime:
    """A strictly increasing capture time, so "oldest first" is deterministic."""
    return _EPOCH + timedelta(seconds=next(_clock))


async def add_thread(
    app: FastAPI,
    *,
    parent: str | None = None,
    bp: int = 0,
    turns: int = 0,
    status: str = "active",
    reason: str | None = None,
    deleted: bool = False,
    artifacts: dict[int, int] | None = None,
    owner_id: int | None = None,
    times: list[datetime] | None = None,
) -> str:
    """A root (no `parent`) or a branch at `bp`, owning `turns` turns with a snapshot each.

    `artifacts` maps a turn index to how many artifacts this thread stamps with it.
    """
    db = db_of(app)
    user_id = owner_id if owner_id is not None else app.state.local_user.id
    tid = new_thread_id()
    async with db.transaction() as s:
        root = tid
        if parent is not None:
            parent_row = await s.get(Conversation, parent)
            assert parent_row is not None
            root = parent_row.root_thread_id
        conv = Conversation(
            thread_id=tid,
            user_id=user_id,
            root_thread_id=root,
            title=f"title {tid[-4:]}",
            turn_index=bp,
            created_at=now(),
            updated_at=now(),
        )
        s.add(conv)
        await s.flush()
        if parent is not None:
            s.add(
                ConversationBranch(
                    thread_id=tid,
                    parent_thread_id=parent,
                    branch_point_turn=bp,
                    reason=reason,
                    status=status,
                )
            )
        for i, k in enumerate(range(bp + 1, bp + turns + 1)):
            conv.turn_index = k
            writes, _ = await snapshots.capture_snapshot(
                s, conv, turn_index=k, user_message=f"message {k} on {tid}"
            )
            await execute_all(s, *writes)
            await s.execute(
                update(WorkspaceSnapshot)
                .where(WorkspaceSnapshot.thread_id == tid, WorkspaceSnapshot.turn_index == k)
                .values(captured_at=times[i] if times else tick())
            )
        for turn, count in (artifacts or {}).items():
            for n in range(count):
                s.add(Artifact(thread_id=tid, turn_index=turn, title=f"a{n}", content="x" * 10))
        if deleted:
            conv.deleted_at = now()
    return tid


async def graph(client: httpx.AsyncClient, tid: str) -> dict[str, Any]:
    r = await client.get(f"/api/conversations/{tid}/graph")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def node_ids(g: dict[str, Any]) -> list[str]:
    return [n["id"] for n in g["nodes"]]


def thread_ids(g: dict[str, Any]) -> set[str]:
    return {t["thread_id"] for t in g["threads"]}


def edges(g: dict[str, Any]) -> set[tuple[str, str, str, str | None]]:
    out = set()
    for e in g["edges"]:
        assert e["id"] == f"{e['source']}->{e['target']}"
        out.add((e["source"], e["target"], e["kind"], e["reason"]))
    return out


def on_path(g: dict[str, Any]) -> set[str]:
    return {n["id"] for n in g["nodes"] if n["is_on_active_path"]}


def assert_no_dangling(g: dict[str, Any]) -> None:
    ids = set(node_ids(g))
    for e in g["edges"]:
        assert e["source"] in ids and e["target"] in ids, e


async def test_new_conversation_has_no_nodes(client: httpx.AsyncClient) -> None:
    tid = (await client.post("/api/conversations", json={"title": "Fresh"})).json()["thread_id"]
    g = await graph(client, tid)
    assert g == {
        "root_thread_id": tid,
        "head_turn_id": None,
        "truncated": False,
        "threads": [
            {
                "thread_id": tid,
                "title": "Fresh",
                "name": None,
                "parent_thread_id": None,
                "branch_point_turn": None,
                "reason": None,
                "turn_index": 0,
                "deleted": False,
                "summary": None,
                "archived": False,
            }
        ],
        "nodes": [],
        "edges": [],
    }


async def test_linear_thread(app: FastAPI, client: httpx.AsyncClient) -> None:
    r = await add_thread(app, turns=3)
    g = await graph(client, r)
    assert g["root_thread_id"] == r and g["truncated"] is False
    assert node_ids(g) == [f"{r}:1", f"{r}:2", f"{r}:3"]
    assert g["head_turn_id"] == f"{r}:3"
    assert edges(g) == {
        (f"{r}:1", f"{r}:2", "turn", None),
        (f"{r}:2", f"{r}:3", "turn", None),
    }
    first = g["nodes"][0]
    assert first["thread_id"] == r and first["turn_index"] == 1
    assert first["user_message"] == f"message 1 on {r}"
    assert first["state"] == NodeState.RUNNING and first["artifact_count"] == 0
    assert datetime.fromisoformat(first["captured_at"]).tzinfo is not None
    assert on_path(g) == set(node_ids(g))


async def test_branch_edge_reason_and_active_path(app: FastAPI, client: httpx.AsyncClient) -> None:
    r = await add_thread(app, turns=3)
    b = await add_thread(app, parent=r, bp=2, turns=2, reason="try a formal tone")
    from_b = await graph(client, b)
    assert sorted(node_ids(from_b)) == sorted([f"{r}:1", f"{r}:2", f"{r}:3", f"{b}:3", f"{b}:4"])
    assert edges(from_b) == {
        (f"{r}:1", f"{r}:2", "turn", None),
        (f"{r}:2", f"{r}:3", "turn", None),
        (f"{r}:2", f"{b}:3", "branch", "try a formal tone"),
        (f"{b}:3", f"{b}:4", "turn", None),
    }
    assert on_path(from_b) == {f"{r}:1", f"{r}:2", f"{b}:3", f"{b}:4"}
    assert from_b["head_turn_id"] == f"{b}:4"
    assert from_b["root_thread_id"] == r
    threads = {t["thread_id"]: t for t in from_b["threads"]}
    assert [t["thread_id"] for t in from_b["threads"]] == [r, b]
    assert threads[b]["parent_thread_id"] == r and threads[b]["branch_point_turn"] == 2
    assert threads[b]["reason"] == "try a formal tone" and threads[b]["turn_index"] == 4

    from_root = await graph(client, r)
    assert edges(from_root) == edges(from_b)
    assert on_path(from_root) == {f"{r}:1", f"{r}:2", f"{r}:3"}
    assert from_root["head_turn_id"] == f"{r}:3"


async def test_branch_at_zero_is_a_root_level_node(app: FastAPI, client: httpx.AsyncClient) -> None:
    r = await add_thread(app, turns=2)
    z = await add_thread(app, parent=r, bp=0, turns=2, reason="retry the first message")
    g = await graph(client, z)
    assert edges(g) == {
        (f"{r}:1", f"{r}:2", "turn", None),
        (f"{z}:1", f"{z}:2", "turn", None),
    }
    assert not any(e["target"] == f"{z}:1" for e in g["edges"])
    entry = next(t for t in g["threads"] if t["thread_id"] == z)
    assert entry["branch_point_turn"] == 0 and entry["reason"] == "retry the first message"
    assert on_path(g) == {f"{z}:1", f"{z}:2"}
    assert g["head_turn_id"] == f"{z}:2"


async def test_branch_of_a_branch(app: FastAPI, client: httpx.AsyncClient) -> None:
    r = await add_thread(app, turns=3)
    b = await add_thread(app, parent=r, bp=2, turns=2, reason="b")
    c = await add_thread(app, parent=b, bp=3, turns=2, reason="c")
    # A branch point inside an ancestor's turns: the edge starts at the owner of turn 2.
    d = await add_thread(app, parent=b, bp=2, turns=1, reason="d")
    g = await graph(client, c)
    assert {e for e in edges(g) if e[2] == "branch"} == {
        (f"{r}:2", f"{b}:3", "branch", "b"),
        (f"{b}:3", f"{c}:4", "branch", "c"),
        (f"{r}:2", f"{d}:3", "branch", "d"),
    }
    assert on_path(g) == {f"{r}:1", f"{r}:2", f"{b}:3", f"{c}:4", f"{c}:5"}
    assert g["head_turn_id"] == f"{c}:5"
    assert [t["thread_id"] for t in g["threads"]][:2] == [r, b]
    assert_no_dangling(g)


async def test_deep_lineage_has_no_depth_cap(app: FastAPI, client: httpx.AsyncClient) -> None:
    chain = [await add_thread(app, turns=1)]
    for depth in range(1, 61):
        chain.append(await add_thread(app, parent=chain[-1], bp=depth, turns=1))
    deepest = chain[-1]
    g = await graph(client, deepest)
    assert g["root_thread_id"] == chain[0]
    assert len(g["threads"]) == 61 and len(g["nodes"]) == 61
    assert on_path(g) == set(node_ids(g))
    assert g["head_turn_id"] == f"{deepest}:61"
    branch_edges = {(e["source"], e["target"]) for e in g["edges"] if e["kind"] == "branch"}
    assert branch_edges == {(f"{chain[i]}:{i + 1}", f"{chain[i + 1]}:{i + 2}") for i in range(60)}
    # From the root, the whole chain is visible but only the root's turn is on the path.
    from_root = await graph(client, chain[0])
    assert len(from_root["nodes"]) == 61 and on_path(from_root) == {f"{chain[0]}:1"}


async def test_soft_deleted_threads(app: FastAPI, client: httpx.AsyncClient) -> None:
    r = await add_thread(app, turns=2)
    b = await add_thread(app, parent=r, bp=1, turns=2, deleted=True)
    c = await add_thread(app, parent=b, bp=2, turns=1)
    sibling = await add_thread(app, parent=b, bp=3, turns=1)
    gone = await add_thread(app, parent=r, bp=2, turns=1, deleted=True)

    # From the root, the deleted branch takes its whole subtree with it.
    from_root = await graph(client, r)
    assert thread_ids(from_root) == {r}
    assert node_ids(from_root) == [f"{r}:1", f"{r}:2"]

    # A live thread under the deleted one still renders the deleted ancestor's history,
    # and the walk below the ancestor it keeps is the ordinary one.
    from_c = await graph(client, c)
    assert thread_ids(from_c) == {r, b, c, sibling}
    threads = {t["thread_id"]: t for t in from_c["threads"]}
    assert threads[b]["deleted"] is True and threads[c]["deleted"] is False
    assert (f"{r}:1", f"{b}:2", "branch", None) in edges(from_c)
    assert (f"{b}:2", f"{c}:3", "branch", None) in edges(from_c)
    assert on_path(from_c) == {f"{r}:1", f"{b}:2", f"{c}:3"}
    assert gone not in thread_ids(from_c)
    assert_no_dangling(from_c)


async def test_pending_and_draft_branches_are_invisible(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    r = await add_thread(app, turns=2)
    active = await add_thread(app, parent=r, bp=1, turns=1)
    pending = await add_thread(app, parent=r, bp=1, turns=1, status="pending")
    draft = await add_thread(app, parent=r, bp=2, turns=0, status="draft")
    under_draft = await add_thread(app, parent=draft, bp=2, turns=1)
    g = await graph(client, r)
    assert thread_ids(g) == {r, active}
    assert set(node_ids(g)) == {f"{r}:1", f"{r}:2", f"{active}:2"}

    # The requested draft is shown (it is the working thread); its parent's other
    # hidden children stay hidden.
    from_draft = await graph(client, draft)
    assert thread_ids(from_draft) == {r, active, draft, under_draft}
    assert pending not in thread_ids(from_draft)
    assert from_draft["head_turn_id"] == f"{r}:2"
    assert on_path(from_draft) == {f"{r}:1", f"{r}:2"}

    # Drafts in the lineage of the requested thread are kept too.
    from_under = await graph(client, under_draft)
    assert {draft, under_draft} <= thread_ids(from_under)
    assert (f"{r}:2", f"{under_draft}:3", "branch", None) in edges(from_under)

    r404 = await client.get(f"/api/conversations/{pending}/graph")
    assert r404.status_code == 404


async def test_branch_without_turns_is_listed_without_nodes(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    r = await add_thread(app, turns=3)
    e = await add_thread(app, parent=r, bp=2, turns=0, reason="later")
    g = await graph(client, e)
    entry = next(t for t in g["threads"] if t["thread_id"] == e)
    assert entry["turn_index"] == 2 and entry["reason"] == "later"
    assert not any(n["thread_id"] == e for n in g["nodes"])
    assert not any(e in edge["target"] for edge in g["edges"])
    assert g["head_turn_id"] == f"{r}:2"
    assert on_path(g) == {f"{r}:1", f"{r}:2"}


async def test_artifact_count_per_node(app: FastAPI, client: httpx.AsyncClient) -> None:
    r = await add_thread(app, turns=3, artifacts={1: 2, 3: 1})
    # A branch carries copies of the artifacts up to its branch point (turn <= 1): they
    # belong to the parent's nodes, never counted twice.
    b = await add_thread(app, parent=r, bp=1, turns=2, artifacts={1: 2, 2: 3})
    g = await graph(client, b)
    counts = {n["id"]: n["artifact_count"] for n in g["nodes"]}
    assert counts == {
        f"{r}:1": 2,
        f"{r}:2": 0,
        f"{r}:3": 1,
        f"{b}:2": 3,
        f"{b}:3": 0,
    }


class TestNodeCap:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"graph_node_cap": 5}

    async def test_oldest_nodes_dropped_first_without_dangling_edges(
        self, app: FastAPI, client: httpx.AsyncClient
    ) -> None:
        t = [_EPOCH + timedelta(days=1, seconds=i) for i in range(9)]
        # The branch's turns were captured before the root's later turns, so age (not
        # turn number) decides: the branch keeps only its newest turn. The requested
        # thread's path is never dropped (big trees): r:1 and r:2 come on top of the cap.
        r = await add_thread(app, turns=6, times=[t[0], t[1], t[5], t[6], t[7], t[8]])
        b = await add_thread(app, parent=r, bp=2, turns=3, times=[t[2], t[3], t[4]], reason="b")
        g = await graph(client, r)
        assert g["truncated"] is True
        assert set(node_ids(g)) == {f"{b}:5", *(f"{r}:{k}" for k in range(1, 7))}
        assert edges(g) == {
            (f"{r}:1", f"{r}:2", "turn", None),
            (f"{r}:2", f"{r}:3", "turn", None),
            (f"{r}:3", f"{r}:4", "turn", None),
            (f"{r}:4", f"{r}:5", "turn", None),
            (f"{r}:5", f"{r}:6", "turn", None),
        }
        assert_no_dangling(g)
        assert thread_ids(g) == {r, b}

    async def test_exactly_at_cap_is_not_truncated(
        self, app: FastAPI, client: httpx.AsyncClient
    ) -> None:
        r = await add_thread(app, turns=5)
        g = await graph(client, r)
        assert g["truncated"] is False and len(g["nodes"]) == 5


@contextmanager
def recorded_statements(app: FastAPI) -> Iterator[list[str]]:
    """The SQL that this task (and the request it makes) runs meanwhile.

    Background tasks of the app (the event pump, the stale-turn sweep, the janitor)
    were started in another context, so their statements, BEGIN included, are not
    recorded, however the timing falls.
    """
    statements: list[str] = []
    engine = db_of(app).engine.sync_engine

    def record(*args: Any) -> None:
        if _recording.get():
            statements.append(str(args[2]))

    event.listen(engine, "before_cursor_execute", record)
    token = _recording.set(True)
    try:
        yield statements
    finally:
        _recording.reset(token)
        event.remove(engine, "before_cursor_execute", record)


_recording: ContextVar[bool] = ContextVar("recording_statements", default=False)


async def test_query_count_does_not_grow_with_the_family(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    small = await add_thread(app, turns=2, artifacts={1: 1})
    await add_thread(app, parent=small, bp=1, turns=1, reason="x")

    # 30 threads: mostly a deep chain, with some side branches off earlier threads.
    clock = {await add_thread(app, turns=2, artifacts={2: 1}): 2}
    tips = list(clock)
    for i in range(29):
        parent = tips[-1] if i % 3 else tips[max(0, len(tips) - 4)]
        bp = clock[parent]
        child = await add_thread(app, parent=parent, bp=bp, turns=2, artifacts={bp + 1: 1})
        clock[child] = bp + 2
        tips.append(child)

    with recorded_statements(app) as small_sql:
        g_small = await graph(client, small)
    with recorded_statements(app) as big_sql:
        g_big = await graph(client, tips[-1])
    assert len(g_small["threads"]) == 2 and len(g_big["threads"]) == 30
    assert len(small_sql) == len(big_sql), (small_sql, big_sql)
    assert 6 <= len(big_sql) <= 7  # 6 queries (+ BEGIN on SQLite), models and codes one
    # Turn records are read without the heavy snapshot columns or document bodies.
    for sql in big_sql:
        assert "document_bodies" not in sql and "document_hash" not in sql
        assert "workspace_snapshots.preferences" not in sql


async def test_unknown_deleted_and_foreign_threads(app: FastAPI, client: httpx.AsyncClient) -> None:
    r = await client.get(f"/api/conversations/th_{uuid.uuid4().hex}/graph")
    assert r.status_code == 404 and r.json()["code"] == "not_found"

    root = await add_thread(app, turns=1)
    dead = await add_thread(app, parent=root, bp=1, turns=1, deleted=True)
    assert (await client.get(f"/api/conversations/{dead}/graph")).status_code == 404

    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await add_thread(app, turns=1, owner_id=stranger.id)
    r = await client.get(f"/api/conversations/{foreign}/graph")
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
