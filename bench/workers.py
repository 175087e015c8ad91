"""Scale-out benchmark: `haico serve --workers 2` against one worker, in one run.

Run from the repository root: `.venv/bin/python -m bench.workers`.

The offline model on PostgreSQL. For each worker count (1, then 2; each on its own
fresh database) CONVERSATIONS conversations send TURNS_EACH turns each, the
conversations all at once and each one's turns one after another, through HTTP from
one client process. Throughput is turns per second over the whole run, after a
warm-up of a few turns on every worker.

Target: 2 workers give >= 1.6x the throughput of 1 (the baseline, same run).
The machine's core count is printed: the server processes, PostgreSQL and the client
share those cores.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any

import httpx

from bench.common import ADMIN_URL, admin, print_table, report
from bench.concurrency import ROOT, free_port, spawn, wait_http

CONVERSATIONS = 16
TURNS_EACH = 12
WARMUP_TURNS = 8
MIN_RATIO = 1.6


async def conversation(c: httpx.AsyncClient, base: str, turns: int, label: str) -> int:
    tid = (await c.post(f"{base}/api/conversations", json={"title": label})).json()["thread_id"]
    done = 0
    for i in range(turns):
        r = await c.post(
            f"{base}/api/conversations/{tid}/turns",
            json={"content": f"todo: {label} item {i}; prefer: point {i}"},
        )
        if r.status_code == 200 and "event: turn_completed" in r.text:
            done += 1
    return done


async def measure(workers: int) -> dict[str, Any]:
    name = f"bench_{uuid.uuid4().hex[:16]}"
    await admin(f'CREATE DATABASE "{name}"')
    port = free_port()
    try:
        with tempfile.TemporaryDirectory(prefix="haico-bench-") as tmp:
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("HAICO_")},
                "HAICO_DATABASE_URL": ADMIN_URL.rsplit("/", 1)[0] + f"/{name}",
                "HAICO_DATA_DIR": tmp,
                "HAICO_SECRET_KEY": "bench",
            }
            server = spawn(
                [
                    *(sys.executable, "-m", "app.cli", "serve", "--port", str(port)),
                    *("--workers", str(workers)),
                ],
                cwd=ROOT / "backend",
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            base = f"http://127.0.0.1:{port}"
            try:
                await wait_http(f"{base}/api/health", server)
                limits = httpx.Limits(max_connections=CONVERSATIONS + 4)
                async with httpx.AsyncClient(timeout=120, limits=limits) as c:
                    await asyncio.gather(
                        *(conversation(c, base, 1, f"warm{i}") for i in range(WARMUP_TURNS))
                    )
                    start = time.perf_counter()
                    done = await asyncio.gather(
                        *(conversation(c, base, TURNS_EACH, f"c{i}") for i in range(CONVERSATIONS))
                    )
                    seconds = time.perf_counter() - start
            finally:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
    finally:
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    turns = sum(done)
    return {
        "workers": workers,
        "turns": turns,
        "expected": CONVERSATIONS * TURNS_EACH,
        "seconds": seconds,
        "turns_per_s": turns / seconds,
    }


async def run() -> int:
    one = await measure(1)
    two = await measure(2)
    ratio = two["turns_per_s"] / one["turns_per_s"]
    cores = os.cpu_count()
    print(f"\n{CONVERSATIONS} conversations x {TURNS_EACH} turns, offline model, PostgreSQL")
    print(f"cores on this machine: {cores} (servers, PostgreSQL and the client share them)")
    rows = [one, two]
    print_table(
        rows,
        [
            ("workers", "workers"),
            ("turns", "turns"),
            ("seconds", "seconds"),
            ("turns/s", "turns_per_s"),
        ],
    )
    print(f"ratio 2/1: {ratio:.2f} (target >= {MIN_RATIO})")
    checks = {
        "every_turn_completed": all(r["turns"] == r["expected"] for r in rows),
        f"2_workers_ge_{MIN_RATIO}x_1": ratio >= MIN_RATIO,
    }
    figures = [
        {
            "figure": f"throughput, 2 workers vs 1 ({CONVERSATIONS} conversations at once, "
            f"offline model, PostgreSQL, {cores} cores)",
            "target": f">= {MIN_RATIO}x",
            "measured": f"{ratio:.2f}x ({two['turns_per_s']:.1f} turns/s)",
            "baseline": f"1 worker: {one['turns_per_s']:.1f} turns/s",
            "ok": ratio >= MIN_RATIO,
        }
    ]
    return report("workers", checks, rows=rows, ratio=ratio, cores=cores, figures=figures)


def main() -> None:
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
