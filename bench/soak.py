"""Soak run: many simulated researchers against one real server for minutes.

Run from the repository root (not part of `make bench` nor CI):

    .venv/bin/python -m bench.soak --minutes 10 --researchers 50 [--workers N]

A fresh PostgreSQL database, one `haico serve` process (offline model; `--workers N`
server processes behind it) and N researchers, asyncio tasks of this process, each
with its own HTTP client. Every researcher loops until the time is up over a mix
with random think times (0.1-1 s): create a conversation, send turns (offline-model
commands: `objective: …; todo: …; write: …`), edit the workspace, branch from an
earlier turn, check out an earlier node (asserting the head it last saw, `force`
when an edited draft would be lost), send on the restored draft (branch-on-send),
read the graph, history, workspace, messages and the conversation list, and now and
then follow the family's `/events` stream for a few seconds. Mostly its own
families; one operation in ten goes to another researcher's family, so sends,
checkouts and edits race.

Per operation: count, errors, expected outcomes of concurrency (409
`turn_in_progress` / `conflict` / `checkout_would_discard_changes`, and 404 on a
restored draft that another researcher's checkout discarded meanwhile, confirmed by
the history), p50/p99 latency. An error is any 5xx, transport error or other status,
and a turn stream that does not end with `turn_completed`. Overall: operations/s and
turns/s; the RSS of the server's process tree sampled every 10 s: the first minute's
mean against the last minute's (target: < 10% growth; it includes the warm-up of the
bounded caches), and the steady state, the minute ending half-way through the run
against the last (target: < 2%); the load average.

At the end, for every family: the history's head is a node of the graph, the
working thread's tip is the head (or the working thread is the head's draft), no
turn is active and no node is still `running`; and `GET /api/conversations` lists
no draft. Exit status 1 when there was an error or an invariant failed.

The server's log is kept (its path is printed) for looking into any error.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from bench.common import ADMIN_URL, admin, median, percentile, print_table, report
from bench.concurrency import ROOT, free_port, spawn, wait_http
from bench.soak_researcher import (
    Researcher,
)
from bench.soak_support import (
    MEMORY_REPORT_EVERY_S,
    RSS_STEADY_TARGET,
    RSS_TARGET,
    Family,
    Stats,
    _window_mean,
    allocator_series,
    sample,
    server_log_problems,
    tree_cpu_s,
    tree_rss_mb,
)
from haico.domain import NodeState

# ---- the end state ----


async def check_invariants(base: str, families: list[Family]) -> tuple[dict[str, int], list[str]]:
    """Per invariant, how many families break it, and the details."""
    broken: Counter[str] = Counter()
    details: list[str] = []
    graph_threads: set[str] = set()
    drafts: set[str] = set()
    async with httpx.AsyncClient(base_url=base, timeout=120) as c:
        for fam in families:
            h: dict[str, Any] = {}
            for _ in range(20):  # a turn's row can outlive its stream by a moment
                hr = await c.get(f"/api/conversations/{fam.root}/history")
                h = hr.json() if hr.status_code == 200 else {}
                if h.get("active_turn") is None:
                    break
                await asyncio.sleep(0.5)
            gr = await c.get(f"/api/conversations/{fam.root}/graph")
            if not h or gr.status_code != 200:
                broken["reads_answered"] += 1
                details.append(f"{fam.root}: history {hr.status_code}, graph {gr.status_code}")
                continue
            g = gr.json()
            nodes = {n["id"]: n for n in g["nodes"]}
            threads = {t["thread_id"] for t in g["threads"]}
            graph_threads |= threads
            head, working = h["head_turn_id"], h["working_thread_id"]
            if h["active_turn"] is not None:
                broken["no_active_turn"] += 1
                details.append(f"{fam.root}: active turn {h['active_turn']}")
            running = [n for n, v in nodes.items() if v["state"] == NodeState.RUNNING]
            if running:
                broken["no_running_node"] += 1
                details.append(f"{fam.root}: running nodes {running}")
            if head != g["head_turn_id"]:
                broken["history_head_eq_graph_head"] += 1
                details.append(f"{fam.root}: history head {head}, graph head {g['head_turn_id']}")
            if head is not None and head not in nodes:
                broken["head_is_a_graph_node"] += 1
                details.append(f"{fam.root}: head {head} not among {len(nodes)} graph nodes")
            conv = (await c.get(f"/api/conversations/{working}")).json()
            tip = conv.get("turn_index")
            if working not in threads:  # a restored draft
                drafts.add(working)
                broken["ended_on_a_draft (not a failure)"] += 1
                point = (
                    f"{conv.get('parent_thread_id')}:{conv.get('branch_point_turn')}"
                    if conv.get("parent_thread_id")
                    else None
                )
                ok = tip == (conv.get("branch_point_turn") or 0) and point == head
            else:
                ok = (head is None and tip == 0) or head == f"{working}:{tip}"
            if not ok:
                broken["working_tip_is_head_or_its_draft"] += 1
                details.append(f"{fam.root}: head {head}, working {working} {conv}")
        listed = (await c.get("/api/conversations")).json()
    listed_ids = {x["thread_id"] for x in listed}
    for tid in sorted((listed_ids - graph_threads) | (listed_ids & drafts)):
        broken["list_has_no_draft"] += 1
        details.append(f"listed but not a graph thread (a draft?): {tid}")
    return dict(broken), details


# ---- the run ----


async def soak(minutes: float, researchers: int, workers: int) -> int:
    name = f"bench_{uuid.uuid4().hex[:16]}"
    await admin(f'CREATE DATABASE "{name}"')
    port = free_port()
    log_path = Path(tempfile.gettempdir()) / f"haico-soak-{name}.log"
    stats = Stats()
    families: list[Family] = []
    samples: list[tuple[float, float, float]] = []
    load_start = os.getloadavg()
    try:
        with (
            tempfile.TemporaryDirectory(prefix="haico-soak-") as tmp,
            log_path.open("wb") as log,
        ):
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("HAICO_")},
                "HAICO_DATABASE_URL": ADMIN_URL.rsplit("/", 1)[0] + f"/{name}",
                "HAICO_DATA_DIR": tmp,
                "HAICO_SECRET_KEY": "bench",
                "HAICO_LLM": "offline",
                "HAICO_MEMORY_REPORT_SECONDS": str(MEMORY_REPORT_EVERY_S),
            }
            server = spawn(
                [
                    *(sys.executable, "-m", "haico.cli.main", "serve", "--port", str(port)),
                    *("--workers", str(workers)),
                ],
                cwd=ROOT / "backend",
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
            base = f"http://127.0.0.1:{port}"
            try:
                await wait_http(f"{base}/api/health", server)
                print(
                    f"soak: {researchers} researchers, {minutes:g} min, {workers} worker(s), "
                    f"server log {log_path}",
                    flush=True,
                )
                t0 = time.monotonic()
                t0_wall = time.time()
                cpu0 = tree_cpu_s(server.pid)
                sampler = asyncio.create_task(sample(server.pid, samples, t0))
                end = t0 + minutes * 60
                crowd = [Researcher(i, base, stats, families, end) for i in range(researchers)]
                progress = asyncio.create_task(_progress(stats, t0, end))
                results = await asyncio.gather(*(r.run() for r in crowd), return_exceptions=True)
                seconds = time.monotonic() - t0
                cpu = tree_cpu_s(server.pid) - cpu0
                samples.append((seconds, tree_rss_mb(server.pid), os.getloadavg()[0]))
                sampler.cancel()
                progress.cancel()
                for res in results:
                    if isinstance(res, BaseException):
                        stats.error("researcher", 0.0, f"researcher task died: {res!r}")
                load_end = os.getloadavg()
                broken, details = await check_invariants(base, families)
                alive = server.poll() is None
            finally:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
    finally:
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    return summarize(
        stats=stats,
        families=families,
        samples=samples,
        seconds=seconds,
        cpu=cpu,
        broken=broken,
        details=details,
        alive=alive,
        loads=(load_start, load_end),
        args=(minutes, researchers, workers),
        log_path=log_path,
        memory=allocator_series(log_path, t0_wall),
    )


async def _progress(stats: Stats, t0: float, end: float) -> None:
    while True:
        await asyncio.sleep(60)
        ops = sum(len(s.latencies) for s in stats.ops.values())
        errors = sum(s.errors for s in stats.ops.values())
        print(
            f"  {time.monotonic() - t0:5.0f} s: {ops} operations, {stats.turns_completed} turns, "
            f"{errors} errors, load {os.getloadavg()[0]:.1f}",
            flush=True,
        )


def summarize(
    *,
    stats: Stats,
    families: list[Family],
    samples: list[tuple[float, float, float]],
    seconds: float,
    cpu: float,
    broken: dict[str, int],
    details: list[str],
    alive: bool,
    loads: tuple[tuple[float, float, float], tuple[float, float, float]],
    args: tuple[float, int, int],
    log_path: Path,
    memory: dict[str, list[tuple[float, float, float]]],
) -> int:
    minutes, researchers, workers = args
    broken = dict(broken)
    on_draft = broken.pop("ended_on_a_draft (not a failure)", 0)
    rows = []
    for op in sorted(stats.ops, key=lambda o: -len(stats.ops[o].latencies)):
        s = stats.ops[op]
        rows.append(
            {
                "op": op,
                "count": len(s.latencies),
                "errors": s.errors,
                "expected": sum(s.expected.values()),
                "p50_ms": median(s.latencies),
                "p99_ms": percentile(s.latencies, 99),
                "max_ms": max(s.latencies, default=0.0),
            }
        )
    total_ops = sum(r["count"] for r in rows)
    errors = sum(r["errors"] for r in rows)
    expected: Counter[str] = Counter()
    for s in stats.ops.values():
        expected.update(s.expected)
    first = _window_mean(samples, 0, 60)
    last = _window_mean(samples, max(0.0, seconds - 60), seconds + 1)
    growth = (last - first) / first if first else float("nan")
    # Steady state: the minute that ends half-way through the run against the last
    # minute (the first minutes include the warm-up of the bounded caches).
    middle = _window_mean(samples, max(0.0, seconds / 2 - 60), seconds / 2)
    growth_second_half = (last - middle) / middle if middle else float("nan")
    loads_seen = [ld for _, _, ld in samples]
    # The RSS's anonymous and file-backed parts, and the allocator's own view
    # (jemalloc): live memory against what it holds.
    allocator: dict[str, dict[str, float]] = {}
    for name, series in memory.items():
        mid, end = (
            _window_mean(series, max(0.0, seconds / 2 - 60), seconds / 2),
            _window_mean(series, max(0.0, seconds - 60), seconds + 1),
        )
        allocator[name] = {
            "first_min_mb": _window_mean(series, 0, 60),
            "middle_min_mb": mid,
            "last_min_mb": end,
            "growth_second_half": (end - mid) / mid if mid else float("nan"),
            "per_minute_mb": [  # type: ignore[dict-item]
                round(_window_mean(series, m * 60, (m + 1) * 60 - 0.001), 1)
                for m in range(int(seconds // 60) + 1)
            ],
        }

    print(
        f"\n{researchers} researchers for {seconds:.0f} s against `haico serve --workers "
        f"{workers}` (offline model, PostgreSQL), {os.cpu_count()} cores"
    )
    print_table(
        rows,
        [
            ("operation", "op"),
            ("count", "count"),
            ("errors", "errors"),
            ("409/404 expected", "expected"),
            ("p50 ms", "p50_ms"),
            ("p99 ms", "p99_ms"),
            ("max ms", "max_ms"),
        ],
    )
    print(
        f"total: {total_ops} operations ({total_ops / seconds:.1f}/s), "
        f"{stats.turns_completed} turns completed ({stats.turns_completed / seconds:.2f}/s), "
        f"{errors} errors, {len(families)} families, {stats.sse_events} SSE events followed"
    )
    for what, n in sorted(expected.items()):
        print(f"  expected outcome of concurrency: {what} x {n}")
    print(
        f"server RSS (process tree): first minute {first:.0f} MB, last minute {last:.0f} MB, "
        f"growth {growth:+.1%} (target < {RSS_TARGET:.0%}); max "
        f"{max((r for _, r, _ in samples), default=0):.0f} MB over {len(samples)} samples"
    )
    print(
        f"server RSS, second half: {middle:.0f} MB in the minute ending half-way, "
        f"{last:.0f} MB in the last, growth {growth_second_half:+.1%} "
        f"(target < {RSS_STEADY_TARGET:.0%})"
    )
    per_minute = [
        _window_mean(samples, m * 60, (m + 1) * 60 - 0.001) for m in range(int(seconds // 60) + 1)
    ]
    print("server RSS per minute (MB): " + " ".join(f"{x:.0f}" for x in per_minute if x == x))
    for name, fig in allocator.items():
        source = "RSS" if name in ("anon", "file") else "jemalloc"
        print(
            f"{source} {name}: first minute {fig['first_min_mb']:.0f} MB, half-way "
            f"{fig['middle_min_mb']:.0f} MB, last minute {fig['last_min_mb']:.0f} MB "
            f"({fig['growth_second_half']:+.1%} over the second half); per minute: "
            + " ".join(f"{x:.0f}" for x in fig["per_minute_mb"] if x == x)  # type: ignore[attr-defined]
        )
    if not allocator:
        print("jemalloc figures: none (the server does not run on jemalloc)")
    print(f"server CPU: {cpu:.0f} s over {seconds:.0f} s ({cpu / seconds:.0%} of one core)")
    print(
        f"load average (1/5/15 min): start {'/'.join(f'{x:.2f}' for x in loads[0])}, "
        f"end {'/'.join(f'{x:.2f}' for x in loads[1])}, 1-min mean over the run "
        f"{sum(loads_seen) / max(1, len(loads_seen)):.2f}"
    )
    if stats.error_samples:
        print("errors (first ones):")
        for line in stats.error_samples[:30]:
            print(f"  {line}")
    problems = server_log_problems(log_path)
    if problems:
        print(f"server log ({log_path}), failures:")
        for line in problems:
            print(f"  {line}")
    print(f"invariants checked on {len(families)} families ({on_draft} ended on a restored draft)")
    if details:
        print("invariants broken:")
        for line in details[:30]:
            print(f"  {line}")
    checks = {
        "zero_errors": errors == 0,
        "server_alive_at_end": alive,
        **{
            f"every_family_{inv}": broken.get(inv, 0) == 0
            for inv in (
                "reads_answered",
                "head_is_a_graph_node",
                "history_head_eq_graph_head",
                "working_tip_is_head_or_its_draft",
                "no_active_turn",
                "no_running_node",
            )
        },
        "list_has_no_draft": broken.get("list_has_no_draft", 0) == 0,
    }
    print(f"  {'met ' if growth < RSS_TARGET else 'MISSED'}  rss_growth_lt_10pct (reported)")
    steady = growth_second_half < RSS_STEADY_TARGET
    print(f"  {'met ' if steady else 'MISSED'}  rss_second_half_growth_lt_2pct (reported)")
    return report(
        "soak",
        checks,
        minutes=minutes,
        researchers=researchers,
        workers=workers,
        seconds=seconds,
        operations=total_ops,
        ops_per_s=total_ops / seconds,
        turns=stats.turns_completed,
        turns_per_s=stats.turns_completed / seconds,
        errors=errors,
        expected=dict(expected),
        families=len(families),
        families_on_a_draft=on_draft,
        rss_first_min_mb=first,
        rss_last_min_mb=last,
        rss_growth=growth,
        rss_middle_min_mb=middle,
        rss_growth_second_half=growth_second_half,
        rss_samples=[(round(t), round(rss, 1)) for t, rss, _ in samples],
        allocator=allocator,
        server_cpu_s=cpu,
        load_start=loads[0],
        load_end=loads[1],
        rows=rows,
        broken=broken,
        log=str(log_path),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--researchers", type=int, default=50)
    parser.add_argument("--workers", type=int, default=1, help="server processes")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    if args.seed is not None:
        random.seed(args.seed)
    sys.exit(asyncio.run(soak(args.minutes, args.researchers, args.workers)))


if __name__ == "__main__":
    main()
