"""Checkout benchmark on PostgreSQL: `services.history.checkout` with a heavy workspace.

Run from the repository root: `.venv/bin/python -m bench.checkout`.

A conversation whose workspace holds a 100 KB document, 100 preferences and 100 todos
(set through the workspace service before its first turn, so every snapshot carries
them) runs 20 turns. The benchmark then checks out, alternately, an interior node
(turn 10: restores the workspace as of that node into a hidden draft) and the tip
(turn 20: switches back and drops the draft), ROUND_TRIPS times after a short warm-up,
and reports p50/p95 for each direction and overall.

Target: p50 <= 15 ms, for each direction.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from app.services import workspace
from app.services.history import checkout
from bench.common import (
    Harness,
    median,
    percentile,
    print_table,
    random_text,
    report,
    temp_settings,
)

TURNS = 20
INTERIOR = 10
ROUND_TRIPS = 50
WARMUP = 3
DOCUMENT_CHARS = 100_000
ITEMS = 100
MAX_P50_MS = 15.0


def summary(name: str, times: list[float]) -> dict[str, Any]:
    return {
        "checkout": name,
        "n": len(times),
        "p50_ms": median(times),
        "p95_ms": percentile(times, 95),
        "max_ms": max(times),
    }


async def run() -> int:
    async with temp_settings() as settings, Harness.open(settings) as h:
        thread_id = await h.new_conversation("checkout bench")
        await workspace.put_document(
            h.db,
            user_id=h.user_id,
            thread_id=thread_id,
            content=random_text(DOCUMENT_CHARS, "doc"),
            title="bench",
        )
        for i in range(ITEMS):
            await workspace.add_preference(
                h.db, user_id=h.user_id, thread_id=thread_id, text=f"preference {i}", locked=False
            )
            await workspace.add_todo(
                h.db, user_id=h.user_id, thread_id=thread_id, text=f"todo {i}", done=False, depth=0
            )
        for i in range(1, TURNS + 1):
            await h.send(thread_id, random_text(200, f"turn {i}:"))
        interior, tip = f"{thread_id}:{INTERIOR}", f"{thread_id}:{TURNS}"
        retains = settings.history_retains_branches
        to_interior: list[float] = []
        to_tip: list[float] = []
        for n in range(WARMUP + ROUND_TRIPS):
            for target, bucket in ((interior, to_interior), (tip, to_tip)):
                start = time.perf_counter()
                out = await checkout(
                    h.db, user_id=h.user_id, thread_id=thread_id, turn_id=target, retains=retains
                )
                ms = (time.perf_counter() - start) * 1000
                if out.head_turn_id != target:
                    raise RuntimeError(f"checkout to {target} left the head at {out.head_turn_id}")
                if n >= WARMUP:
                    bucket.append(ms)
        ws = await workspace.get_workspace(h.db, user_id=h.user_id, thread_id=thread_id)
        assert ws.document is not None and len(ws.document.content) == DOCUMENT_CHARS
        assert len(ws.preferences) == ITEMS and len(ws.todos) == ITEMS
    rows = [
        summary(f"to interior (turn {INTERIOR})", to_interior),
        summary(f"to tip (turn {TURNS})", to_tip),
        summary("all", to_interior + to_tip),
    ]
    print(
        f"checkout with a {DOCUMENT_CHARS // 1000} KB document, {ITEMS} preferences, "
        f"{ITEMS} todos; {ROUND_TRIPS} round trips"
    )
    print_table(
        rows,
        [
            ("checkout", "checkout"),
            ("n", "n"),
            ("p50 ms", "p50_ms"),
            ("p95 ms", "p95_ms"),
            ("max ms", "max_ms"),
        ],
    )
    checks = {
        "p50_to_interior_le_15ms": rows[0]["p50_ms"] <= MAX_P50_MS,
        "p50_to_tip_le_15ms": rows[1]["p50_ms"] <= MAX_P50_MS,
    }
    rounded = [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rows]
    return report("checkout", checks, round_trips=ROUND_TRIPS, results=rounded)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
