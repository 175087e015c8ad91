"""SQLite under concurrency: 16 conversations sending turns at once against one
conversation sending alone, on the embedded store, in the same run.

Writers share one SQLite write lock; what must not happen is a lock convoy in which
many writers (and readers queued behind them) make the whole store slower than a
single user. Target: the 16 conversations together complete at least as many turns
per second as one alone (their aggregate throughput is no lower), and a read during
the run is not held up by the writers (p99 of `GET`-equivalent graph reads).

Run: `.venv/bin/python -m bench.sqlite_concurrency`.
"""

from __future__ import annotations

import asyncio
import sys
import time

from app.services.graph import build_graph
from bench.common import Harness, median, percentile, print_table, report, temp_settings

CONVERSATIONS = 16
TURNS = 6  # per conversation
MESSAGE = "objective: compare cycling policies; todo: collect sources; write: notes"


async def _one_conversation(h: Harness, turns: int) -> list[float]:
    tid = await h.new_conversation()
    times = []
    for i in range(turns):
        _, ms = await h.send(tid, f"{MESSAGE} {i}")
        times.append(ms)
    return times


async def _reads_while(h: Harness, tid: str, stop: asyncio.Event) -> list[float]:
    times = []
    while not stop.is_set():
        start = time.perf_counter()
        await build_graph(h.db, user_id=h.user_id, thread_id=tid, node_cap=500)
        times.append((time.perf_counter() - start) * 1000)
        await asyncio.sleep(0.05)
    return times


async def run() -> int:
    async with temp_settings("sqlite") as settings, Harness.open(settings) as h:
        await _one_conversation(h, 2)  # warm-up
        # One conversation alone.
        start = time.perf_counter()
        alone = await _one_conversation(h, CONVERSATIONS * TURNS // 4)
        alone_rate = len(alone) / (time.perf_counter() - start)
        # Sixteen at once, with a reader alongside.
        reader_tid = await h.new_conversation()
        await h.send(reader_tid, MESSAGE)
        stop = asyncio.Event()
        reader = asyncio.create_task(_reads_while(h, reader_tid, stop))
        start = time.perf_counter()
        together = await asyncio.gather(
            *(_one_conversation(h, TURNS) for _ in range(CONVERSATIONS))
        )
        elapsed = time.perf_counter() - start
        stop.set()
        reads = await reader
        all_times = [t for times in together for t in times]
        together_rate = len(all_times) / elapsed
    ratio = together_rate / alone_rate
    rows = [
        {
            "run": "1 conversation",
            "turns": len(alone),
            "turns/s": alone_rate,
            "p50 ms": median(alone),
            "p99 ms": percentile(alone, 99),
        },
        {
            "run": f"{CONVERSATIONS} at once",
            "turns": len(all_times),
            "turns/s": together_rate,
            "p50 ms": median(all_times),
            "p99 ms": percentile(all_times, 99),
        },
    ]
    print_table(
        rows,
        [(c, c) for c in ("run", "turns", "turns/s", "p50 ms", "p99 ms")],
    )
    print(
        f"graph reads during the run: {len(reads)}, p50 {median(reads):.1f} ms, "
        f"p99 {percentile(reads, 99):.1f} ms"
    )
    ok = ratio >= 1.0
    figures = [
        {
            "figure": f"SQLite: {CONVERSATIONS} conversations at once vs 1 alone (turns/s)",
            "target": ">= 1.0x",
            "measured": f"{ratio:.2f}x ({together_rate:.1f} vs {alone_rate:.1f} turns/s); "
            f"graph reads meanwhile p99 {percentile(reads, 99):.0f} ms",
            "baseline": "1 conversation alone, same run",
            "ok": ok,
        }
    ]
    return report(
        "sqlite_concurrency",
        {"sixteen_not_slower_than_one": ok},
        ratio=ratio,
        rows=rows,
        figures=figures,
    )


def main() -> None:
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
