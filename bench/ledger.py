"""Research ledger benchmark: the analysis CSV of a 5,000-node family and the path
document of a 400-step path, on PostgreSQL.

Run from the repository root: `.venv/bin/python -m bench.ledger`.

Data, written straight into the tables (the turn path is benchmarked by
`bench.turns`, whose service/bare ratio covers the provenance a turn now records):
a family of 5,000 nodes (a root of 3,000 turns and a branch at turn 1,000 with 2,000
more), each with a user message (~200 characters), a reply (~600), a snapshot
with 10 preferences and 20 todos (one more done every turn, all open again every 20),
a new document body every 10 turns, provenance, and a
note on every 50th node; and a thread of 400 turns shaped the same way.

Measured:
- CSV: `analysis_export.stream_csv` consumed to the end, in a child process (so its
  peak RSS is its own): wall time, and peak RSS growth over the same process after
  a warm-up export of a small family. Baseline, same run, another child: the naive
  export, every row read into memory first (`SELECT` of the family's records with
  their provenance) and the CSV built in one string.
- Path: `path_doc.path_document` of the 400th node, Markdown and HTML, median of
  REPEAT runs after a warm-up. Baseline: the same steps read the naive way, one
  as-of read per step (`resolve_restore_state`, 400 calls).

Targets: CSV <= 2 s with peak RSS growth <= 50 MB; path document <= 200 ms.
"""

from __future__ import annotations

import asyncio
import csv
import hashlib
import io
import json
import resource
import subprocess
import sys
import time
from typing import Any

from sqlalchemy import insert, select

from bench.common import median, print_table, random_text, report, temp_settings
from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import (
    Conversation,
    ConversationBranch,
    DocumentBody,
    NodeProvenance,
    Note,
    WorkspaceSnapshot,
)
from haico.domain import BranchStatus, NodeState, new_thread_id, now
from haico.services.access import users
from haico.services.access.principal import Principal
from haico.services.reports import analysis_export, path_doc
from haico.services.workspace.snapshots import resolve_restore_state

ROOT_TURNS, BRANCH_AT, BRANCH_TURNS = 3000, 1000, 2000
PATH_TURNS = 400
REPEAT = 10
MAX_CSV_S = 2.0
MAX_RSS_MB = 50.0
MAX_PATH_MS = 200.0


def _snapshot(thread_id: str, k: int, doc_hash: str | None) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "turn_index": k,
        "format": 3,
        "objective": f"objective {k // 7}",
        "document_title": "Draft" if doc_hash else None,
        "document_hash": doc_hash,
        "preferences": [
            {"uid": f"p{i}", "text": f"preference {i}", "locked": i < 2} for i in range(10)
        ],
        "todos": [
            {"uid": f"t{i}", "text": f"todo {i}", "done": i < k % 20, "depth": i % 2}
            for i in range(20)
        ],
        "rejected": [],
        "user_message": random_text(200),
        "state": NodeState.COMPLETE.value,
        "reply": random_text(600),
        "captured_at": now(),
        "completed_at": now(),
    }


def _provenance(thread_id: str, k: int) -> dict[str, Any]:
    return {
        "thread_id": thread_id,
        "turn_index": k,
        "provider": "openai",
        "model": "gpt-4o-mini",
        "profile_id": "default",
        "params": {},
        "instructions_sha256": "0" * 64,
        "input_tokens": 1000 + k,
        "output_tokens": 100 + k % 50,
        "tokens_estimated": False,
        "first_token_ms": 300,
        "duration_ms": 1200,
        "tool_calls": k % 3,
        "cost_usd": 0.0004,
    }


async def _thread(
    db: Database, user_id: int, root: str, tid: str, turns: range, clock: int
) -> None:
    async with db.transaction() as s:
        s.add(
            Conversation(
                thread_id=tid,
                user_id=user_id,
                root_thread_id=root,
                title="bench",
                turn_index=clock,
                created_at=now(),
                updated_at=now(),
            )
        )
        await s.flush()
    batch = 500
    ks = list(turns)
    for i in range(0, len(ks), batch):
        chunk = ks[i : i + batch]
        async with db.transaction() as s:
            bodies, snaps = [], []
            for k in chunk:
                doc_hash = None
                if k % 10 == 0:
                    body = random_text(3000)
                    doc_hash = hashlib.sha256(body.encode()).hexdigest()
                    bodies.append({"hash": doc_hash, "content": body})
                snaps.append(_snapshot(tid, k, doc_hash))
            if bodies:
                await s.execute(insert(DocumentBody), bodies)
            await s.execute(insert(WorkspaceSnapshot), snaps)
            await s.execute(insert(NodeProvenance), [_provenance(tid, k) for k in chunk])
            notes = [
                {
                    "user_id": user_id,
                    "root_thread_id": root,
                    "thread_id": tid,
                    "turn_index": k,
                    "text": f"note on {k}, with a comma",
                    "codes": ["closure"] if k % 100 == 0 else ["pushback"],
                    "author": "bench",
                    "created_at": now(),
                    "updated_at": now(),
                }
                for k in chunk
                if k % 50 == 0
            ]
            if notes:
                await s.execute(insert(Note), notes)


async def build(settings: Settings) -> dict[str, str]:
    db = Database(settings.sql_url)
    try:
        user = await users.ensure_local(db, name="bench")
        big, branch, small, path = (new_thread_id() for _ in range(4))
        await _thread(db, user.id, big, big, range(1, ROOT_TURNS + 1), ROOT_TURNS)
        await _thread(
            db,
            user.id,
            big,
            branch,
            range(BRANCH_AT + 1, BRANCH_AT + BRANCH_TURNS + 1),
            BRANCH_AT + BRANCH_TURNS,
        )
        async with db.transaction() as s:
            s.add(
                ConversationBranch(
                    thread_id=branch,
                    parent_thread_id=big,
                    branch_point_turn=BRANCH_AT,
                    status=BranchStatus.ACTIVE,
                    created_at=now(),
                )
            )
        await _thread(db, user.id, small, small, range(1, 21), 20)
        await _thread(db, user.id, path, path, range(1, PATH_TURNS + 1), PATH_TURNS)
        return {"big": big, "small": small, "path": path, "user_id": str(user.id)}
    finally:
        await db.dispose()


# ---- the CSV, in a child process ----


async def _child(url: str, big: str, small: str, naive: bool) -> dict[str, Any]:
    settings = Settings(database_url=url, secret_key="bench")
    db = Database(settings.sql_url)
    try:

        async def ours(root: str) -> int:
            size = 0
            async for chunk in analysis_export.stream_csv(db, [root]):
                size += len(chunk)
            return size

        async def plain(root: str) -> int:
            async with db.read() as s:
                rows = (
                    await s.execute(
                        select(WorkspaceSnapshot, NodeProvenance)
                        .join(Conversation, Conversation.thread_id == WorkspaceSnapshot.thread_id)
                        .outerjoin(
                            NodeProvenance,
                            (NodeProvenance.thread_id == WorkspaceSnapshot.thread_id)
                            & (NodeProvenance.turn_index == WorkspaceSnapshot.turn_index),
                        )
                        .where(Conversation.root_thread_id == root)
                    )
                ).all()
            out = io.StringIO()
            writer = csv.writer(out)
            for snap, prov in rows:
                writer.writerow(
                    [
                        snap.thread_id,
                        snap.turn_index,
                        snap.user_message,
                        snap.reply,
                        json.dumps(snap.todos),
                        prov.model if prov else "",
                    ]
                )
            return len(out.getvalue())

        run = plain if naive else ours
        await run(small)  # warm: imports, connections, statements
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        start = time.perf_counter()
        size = await run(big)
        elapsed = time.perf_counter() - start
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return {"seconds": elapsed, "rss_growth_mb": (after - before) / 1024, "bytes": size}
    finally:
        await db.dispose()


def _csv_in_child(url: str, ids: dict[str, str], naive: bool) -> dict[str, Any]:
    args = [sys.executable, "-m", "bench.ledger", "--child", url, ids["big"], ids["small"]]
    if naive:
        args.append("--naive")
    done = subprocess.run(args, capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


# ---- the path document ----


async def _path(settings: Settings, ids: dict[str, str]) -> tuple[dict[str, float], float]:
    db = Database(settings.sql_url)
    user_id, tid = int(ids["user_id"]), ids["path"]
    principal = Principal(user_id, "bench")
    node = f"{tid}:{PATH_TURNS}"
    out: dict[str, float] = {}
    try:
        for fmt in ("md", "html"):
            samples = []
            for n in range(REPEAT + 1):
                start = time.perf_counter()
                await path_doc.path_document(
                    db, principal=principal, thread_id=tid, node=node, fmt=fmt, notes=True
                )
                if n:
                    samples.append((time.perf_counter() - start) * 1000)
            out[fmt] = median(samples)
        start = time.perf_counter()
        async with db.read() as s:
            conv = await s.get(Conversation, tid)
            assert conv is not None
            for k in range(1, PATH_TURNS + 1):
                await resolve_restore_state(s, conv, k)
        naive = (time.perf_counter() - start) * 1000
    finally:
        await db.dispose()
    return out, naive


async def run() -> int:
    async with temp_settings("postgres") as settings:
        ids = await build(settings)
        url = settings.database_url or ""
        ours = await asyncio.to_thread(_csv_in_child, url, ids, False)
        naive = await asyncio.to_thread(_csv_in_child, url, ids, True)
        path, path_naive = await _path(settings, ids)
    nodes = ROOT_TURNS + BRANCH_TURNS
    rows = [
        {
            "what": f"CSV, {nodes:,} nodes",
            "ours": f"{ours['seconds']:.2f} s, +{ours['rss_growth_mb']:.1f} MB",
            "baseline": f"{naive['seconds']:.2f} s, +{naive['rss_growth_mb']:.1f} MB",
        },
        {
            "what": f"path document, {PATH_TURNS} steps (md)",
            "ours": f"{path['md']:.1f} ms",
            "baseline": f"{path_naive:.0f} ms (as-of read per step)",
        },
        {
            "what": f"path document, {PATH_TURNS} steps (html)",
            "ours": f"{path['html']:.1f} ms",
            "baseline": f"{path_naive:.0f} ms",
        },
    ]
    print(f"\nResearch ledger on PostgreSQL ({REPEAT} runs per path format after a warm-up)")
    print_table(rows, [("what", "what"), ("ours", "ours"), ("baseline", "baseline")])
    csv_ok = ours["seconds"] <= MAX_CSV_S
    rss_ok = ours["rss_growth_mb"] <= MAX_RSS_MB
    path_ok = max(path.values()) <= MAX_PATH_MS
    figures = [
        {
            "figure": f"analysis CSV of a {nodes:,}-node family (PostgreSQL)",
            "target": f"<= {MAX_CSV_S:.0f} s",
            "measured": f"{ours['seconds']:.2f} s ({ours['bytes'] / 1e6:.1f} MB of CSV)",
            "baseline": f"{naive['seconds']:.2f} s, every row read first",
            "ok": csv_ok,
        },
        {
            "figure": f"analysis CSV of a {nodes:,}-node family, peak RSS growth",
            "target": f"<= {MAX_RSS_MB:.0f} MB",
            "measured": f"{ours['rss_growth_mb']:.1f} MB",
            "baseline": f"{naive['rss_growth_mb']:.1f} MB, every row read first",
            "ok": rss_ok,
        },
        {
            "figure": f"path document of a {PATH_TURNS}-step path, md / html (PostgreSQL)",
            "target": f"<= {MAX_PATH_MS:.0f} ms",
            "measured": f"{path['md']:.1f} / {path['html']:.1f} ms",
            "baseline": f"{path_naive:.0f} ms, one as-of read per step",
            "ok": path_ok,
        },
    ]
    checks = {"csv_le_2s": csv_ok, "csv_rss_le_50mb": rss_ok, "path_le_200ms": path_ok}
    return report("ledger", checks, csv=ours, csv_naive=naive, path_ms=path, figures=figures)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        url, big, small = sys.argv[2:5]
        result = asyncio.run(_child(url, big, small, naive="--naive" in sys.argv))
        print(json.dumps(result))
        return
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
