"""Benchmark of the history graph on PostgreSQL: time and query count by family size.

Run from the repository root: `.venv/bin/python -m bench.graph_bench`.

Builds families of 50, 500 and 5000 nodes (many branches, deep lineages, plus hidden
drafts, pending and deleted branches) in a throwaway database `bench_<hex>`, times
`build_graph` for the deepest thread (median of several runs, node cap 500) and counts
its SQL statements. Checks: the query count is the same at every size, and the time at
5000 nodes is at most 4x the time at 500. Exits 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import random
import statistics
import sys
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
from sqlalchemy import event, insert, text

from haico.db import models
from haico.db.base import Base
from haico.db.engine import Database
from haico.domain import NodeState
from haico.services.access.principal import Principal
from haico.services.history.graph import build_graph

ADMIN_URL = os.environ.get(
    "HAICO_BENCH_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
SIZES = (50, 500, 5000)
NODE_CAP = 500
RUNS = 9
MAX_RATIO = 4.0


@dataclass
class Thread:
    thread_id: str
    parent: Thread | None
    branch_point: int
    turn_index: int
    status: str = "active"
    deleted: bool = False
    depth: int = 0

    @property
    def first_owned(self) -> int:
        return self.branch_point + 1


@dataclass
class Family:
    root: Thread
    threads: list[Thread] = field(default_factory=list)
    nodes: int = 0

    def deepest(self) -> Thread:
        visible = [t for t in self.threads if t.status == "active" and not t.deleted]
        return max(visible, key=lambda t: (t.depth, t.turn_index))


def new_id() -> str:
    return "th_" + uuid.uuid4().hex


def plan_family(size: int, rng: random.Random) -> Family:
    """A family owning exactly `size` turns: a root, then branches off random owned nodes.

    Half of the branches fork from the newest thread, which makes lineages deep; the
    rest fork from anywhere, which makes the tree wide.
    """
    root = Thread(new_id(), None, 0, 0)
    family = Family(root, [root])
    root.turn_index = min(size, rng.randint(3, 10))
    family.nodes = root.turn_index
    while family.nodes < size:
        owners = [
            t
            for t in family.threads
            if t.turn_index >= t.first_owned and t.status == "active" and not t.deleted
        ]
        parent = owners[-1] if rng.random() < 0.5 else rng.choice(owners)
        bp = rng.randint(parent.first_owned, parent.turn_index)
        turns = min(size - family.nodes, rng.randint(1, 8))
        child = Thread(new_id(), parent, bp, bp + turns, depth=parent.depth + 1)
        family.threads.append(child)
        family.nodes += turns
        # Hidden threads the graph must skip: they own no visible node.
        roll = rng.random()
        if roll < 0.05:
            family.threads.append(
                Thread(new_id(), parent, bp, bp, status="draft", depth=child.depth)
            )
        elif roll < 0.08:
            family.threads.append(
                Thread(new_id(), parent, bp, bp + 1, status="pending", depth=child.depth)
            )
        elif roll < 0.10:
            dead = Thread(new_id(), parent, bp, bp + 2, deleted=True, depth=child.depth)
            family.threads.append(dead)
    return family


async def insert_family(db: Database, family: Family, *, user_id: int, body_hash: str) -> None:
    """Bulk-insert the family's rows: conversations, branches, snapshots, artifacts."""
    clock = datetime(2025, 1, 1, tzinfo=UTC)
    convs: list[dict[str, Any]] = []
    branches: list[dict[str, Any]] = []
    snaps: list[dict[str, Any]] = []
    arts: list[dict[str, Any]] = []
    prefs = [
        {"uid": uuid.uuid4().hex, "text": "a preference " * 10, "locked": False} for _ in range(5)
    ]
    todos = [
        {"uid": uuid.uuid4().hex, "text": "a todo " * 10, "done": False, "depth": 0}
        for _ in range(5)
    ]
    for i, t in enumerate(family.threads):
        created = clock + timedelta(minutes=i)
        convs.append(
            {
                "thread_id": t.thread_id,
                "user_id": user_id,
                "root_thread_id": family.root.thread_id,
                "title": f"thread {i}",
                "turn_index": t.turn_index,
                "message_count": 2 * t.turn_index,
                "created_at": created,
                "updated_at": created,
                "deleted_at": created if t.deleted else None,
            }
        )
        if t.parent is not None:
            branches.append(
                {
                    "thread_id": t.thread_id,
                    "parent_thread_id": t.parent.thread_id,
                    "branch_point_turn": t.branch_point,
                    "reason": f"reason {i}",
                    "status": t.status,
                    "created_at": created,
                }
            )
        for k in range(t.first_owned, t.turn_index + 1):
            stamp = created + timedelta(seconds=k)
            snaps.append(
                {
                    "thread_id": t.thread_id,
                    "turn_index": k,
                    "format": 2,
                    "objective": "an objective",
                    "document_title": "doc",
                    "document_hash": body_hash,
                    "preferences": prefs,
                    "todos": todos,
                    "user_message": f"message {k} " + "x" * 200,
                    "state": NodeState.COMPLETE.value,
                    "reply": "a reply " * 50,
                    "captured_at": stamp,
                    "completed_at": stamp,
                }
            )
            if k % 3 == 0:
                arts.append(
                    {"thread_id": t.thread_id, "turn_index": k, "title": "a", "content": "y" * 500}
                )
    async with db.transaction() as s:
        for table, rows in (
            (models.Conversation, convs),
            (models.ConversationBranch, branches),
            (models.WorkspaceSnapshot, snaps),
            (models.Artifact, arts),
        ):
            for start in range(0, len(rows), 2000):
                await s.execute(insert(table), rows[start : start + 2000])


async def measure(
    db: Database, *, principal: Principal, thread_id: str
) -> tuple[float, int, int, bool]:
    """Median milliseconds over RUNS, statements per request, nodes returned, truncated."""
    count = 0

    def on_execute(*_: Any) -> None:
        nonlocal count
        count += 1

    for _ in range(2):  # warm the pool and the plan cache
        await build_graph(db, principal=principal, thread_id=thread_id, node_cap=NODE_CAP)
    event.listen(db.engine.sync_engine, "before_cursor_execute", on_execute)
    try:
        result = await build_graph(db, principal=principal, thread_id=thread_id, node_cap=NODE_CAP)
    finally:
        event.remove(db.engine.sync_engine, "before_cursor_execute", on_execute)
    timings = []
    for _ in range(RUNS):
        start = time.perf_counter()
        await build_graph(db, principal=principal, thread_id=thread_id, node_cap=NODE_CAP)
        timings.append((time.perf_counter() - start) * 1000)
    return statistics.median(timings), count, len(result.nodes), result.truncated


async def admin(sql: str) -> None:
    conn = await asyncpg.connect(ADMIN_URL)
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


async def run(seed: int) -> int:
    name = f"bench_{uuid.uuid4().hex[:16]}"
    await admin(f'CREATE DATABASE "{name}"')
    url = "postgresql+asyncpg://" + ADMIN_URL.split("://", 1)[1].rsplit("/", 1)[0] + f"/{name}"
    db = Database(url)
    try:
        async with db.engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        body = "a long document body\n" * 2000
        digest = hashlib.sha256(body.encode()).hexdigest()
        async with db.transaction() as s:
            user = models.User(name="bench")
            s.add(user)
            s.add(models.DocumentBody(hash=digest, content=body))
            await s.flush()
            user_id = user.id
            principal = Principal(user.id, user.name)
        rng = random.Random(seed)
        families = {size: plan_family(size, rng) for size in SIZES}
        for family in families.values():
            await insert_family(db, family, user_id=user_id, body_hash=digest)
        async with db.engine.connect() as conn:
            await conn.execute(text("ANALYZE"))

        rows = []
        for family in families.values():
            target = family.deepest()
            ms, queries, nodes, truncated = await measure(
                db, principal=principal, thread_id=target.thread_id
            )
            rows.append(
                {
                    "family_nodes": family.nodes,
                    "threads": len(family.threads),
                    "lineage_depth": target.depth,
                    "median_ms": round(ms, 2),
                    "queries": queries,
                    "nodes_returned": nodes,
                    "truncated": truncated,
                }
            )
    finally:
        await db.dispose()
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    by_size = {r["family_nodes"]: r for r in rows}
    ratio = by_size[5000]["median_ms"] / max(by_size[500]["median_ms"], 1e-9)
    checks = {
        "queries_constant": len({r["queries"] for r in rows}) == 1,
        "time_5000_le_4x_500": ratio <= MAX_RATIO,
    }
    columns = [
        ("nodes", "family_nodes", 6),
        ("threads", "threads", 7),
        ("depth", "lineage_depth", 5),
        ("median ms", "median_ms", 9),
        ("queries", "queries", 7),
        ("returned", "nodes_returned", 8),
        ("trunc", "truncated", 5),
    ]
    header = " ".join(f"{title:>{width}}" for title, _, width in columns)
    print(header)
    print("-" * len(header))
    for r in rows:
        print(" ".join(f"{r[key]!s:>{width}}" for _, key, width in columns))
    print(f"ratio 5000/500: {ratio:.2f} (limit {MAX_RATIO}); checks: {checks}")
    ok = all(checks.values())
    print(
        json.dumps(
            {
                "bench": "graph",
                "node_cap": NODE_CAP,
                "runs": RUNS,
                "results": rows,
                "ratio_5000_500": round(ratio, 3),
                "checks": checks,
                "ok": ok,
            }
        )
    )
    return 0 if ok else 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    sys.exit(asyncio.run(run(args.seed)))


if __name__ == "__main__":
    main()
