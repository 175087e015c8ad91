"""SQLite under concurrency: 16 conversations sending turns at once against one
conversation sending alone, on the embedded store, in the same run.

Writers share one SQLite write lock; what must not happen is a lock convoy in which
many writers (and readers queued behind them) make the whole store slower than a
single user. Target: the 16 conversations together complete at least as many turns
per second as one alone (their aggregate throughput is no lower), and a read during
the run is not held up by the writers (p99 of `GET`-equivalent graph reads).

Both sides run twice, alternating (one conversation sending 48 turns, then 16 sending
6 each), with the same graph reader alongside (a read every 50 ms), and the rates
are summed over both rounds: the two sides share the machine's drift and the reader's
share of the event loop alike.

Run: `.venv/bin/python -m bench.sqlite_concurrency`.
"""

from __future__ import annotations

import asyncio
import sys
import time

from bench.common import Harness, median, percentile, print_table, report, temp_settings
from haico.services.history.graph import build_graph

CONVERSATIONS = 16
TURNS = 6  # per conversation
ROUNDS = 2
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
        await build_graph(h.db, principal=h.principal, thread_id=tid, node_cap=500)
        times.append((time.perf_counter() - start) * 1000)
        await asyncio.sleep(0.05)
    return times


async def _phase(
    h: Harness, reader_tid: str, conversations: int, turns: int
) -> tuple[list[float], float, list[float]]:
    """`conversations` sending `turns` each at once, with the graph reader alongside:
    (turn times, turns/s, read times)."""
    stop = asyncio.Event()
    reader = asyncio.create_task(_reads_while(h, reader_tid, stop))
    start = time.perf_counter()
    done = await asyncio.gather(*(_one_conversation(h, turns) for _ in range(conversations)))
    elapsed = time.perf_counter() - start
    stop.set()
    times = [t for ts in done for t in ts]
    return times, len(times) / elapsed, await reader


async def run() -> int:
    async with temp_settings("sqlite") as settings, Harness.open(settings) as h:
        await _one_conversation(h, 2)  # warm-up
        reader_tid = await h.new_conversation()
        await h.send(reader_tid, MESSAGE)
        # Both sides run ROUNDS times, alternating, with the same reader alongside, so
        # drift in the machine's load and the reader's share fall on both alike.
        alone: list[float] = []
        all_times: list[float] = []
        reads: list[float] = []
        alone_s = together_s = 0.0
        for _ in range(ROUNDS):
            times, rate, r = await _phase(h, reader_tid, 1, CONVERSATIONS * TURNS // 2)
            alone += times
            alone_s += len(times) / rate
            reads += r
            times, rate, r = await _phase(h, reader_tid, CONVERSATIONS, TURNS)
            all_times += times
            together_s += len(times) / rate
            reads += r
        alone_rate = len(alone) / alone_s
        together_rate = len(all_times) / together_s
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
