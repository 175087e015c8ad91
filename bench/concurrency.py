"""Concurrency benchmark: many researchers whose model is slow and streaming.

Run from the repository root: `.venv/bin/python -m bench.concurrency [--sizes 64,256]`.

A fake OpenAI-compatible server (`bench.fake_openai`, its own process) streams 200
tokens at 50 tokens/s to every request. One `haico serve` process (PostgreSQL,
`HAICO_LLM=openai` pointed at the fake) takes N conversations sending one turn each,
all at once, from one client process. For every turn the client notes when each of
the fake's tokens arrives in the turn's `token` events (an event that carries several
tokens counts each of them as arriving then).

Baseline, same run: the same client reads N streams straight from the fake, so the
baseline gap includes the fake's own pacing and the client's own cost at that load.

Reported per N: turns completed, p50/p99 gap between tokens through HAICO and
straight from the fake, and the backend's CPU time per turn (user + system time of
the server process, from /proc, over the run, divided by the turns).

A size still running after TIME_LIMIT_S is cut off there; its unfinished turns count
as not completed.

The floor for the CPU, same run: `bench.bare_langgraph`, in a process of its own,
streams N turns of the same fake through a bare LangGraph graph (one node, ChatOpenAI,
the PostgreSQL checkpointer), with langchain-openai's own client and with the lean
subclass HAICO uses; HAICO's CPU per turn is compared with the cheaper of the two.

Targets: N = 64, every turn completes, the p99 gap through HAICO is at most 50 ms above
the baseline's p99, and the backend's CPU per turn is at most 2x the bare graph's.
N = 256: every turn completes and the p99 gap is at most 100 ms above the baseline's.
The server's peak memory (VmHWM) is reported after each size. Other N are reported.

`--replicas K` (not part of `make bench`) then runs the same sizes again through the
deployment's proxy: Caddy on `deploy/Caddyfile` in front of K `haico serve`
processes on the same database, the one process stopped first. Its rows are reported
beside the one-process rows (CPU per turn summed over the replicas; Caddy's own CPU
apart); they are not checked.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import httpx

from bench.common import ADMIN_URL, admin, median, percentile, print_table, report

TOKENS = 200
TOKEN = re.compile(r"t\d+ ")
RATE = 50.0
TARGET_N = 64
MAX_P99_ABOVE_MS = 50.0
LARGE_N = 256
MAX_P99_ABOVE_MS_LARGE = 100.0
MAX_CPU_OVER_BARE = 2.0
# A size whose turns are not all done after this long is cut off and reported so.
TIME_LIMIT_S = 240.0
ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def spawn(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
    """A child process (a plain function: the benchmarks start servers from async code)."""
    return subprocess.Popen(args, **kwargs)


def peak_rss_mb(pid: int) -> float:
    """The process's peak resident memory so far (VmHWM), in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return math.nan


async def bare_cpu(n: int, fake: str, pg: str) -> dict[str, float]:
    """CPU ms per turn of the bare LangGraph graph, per client, on N turns at once."""
    out: dict[str, float] = {}
    for client in ("stock", "lean"):
        proc = await asyncio.create_subprocess_exec(
            *(sys.executable, "-m", "bench.bare_langgraph", "--n", str(n)),
            *("--base-url", f"{fake}/v1", "--pg", pg, "--client", client),
            cwd=ROOT,
            stdout=asyncio.subprocess.PIPE,
        )
        stdout, _ = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"bench.bare_langgraph --client {client} exited {proc.returncode}")
        row = json.loads(stdout.decode().strip().splitlines()[-1])
        for error in row["errors"]:
            print(f"  bare turn failed: {error}")
        out[client] = row["cpu_ms_per_turn"] if row["completed"] == n else math.nan
    return out


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def wait_http(url: str, proc: subprocess.Popen[bytes], seconds: float = 90) -> None:
    deadline = time.monotonic() + seconds
    async with httpx.AsyncClient(timeout=2) as c:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"{proc.args} exited with {proc.returncode}")
            try:
                if (await c.get(url)).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{url} did not answer")
            await asyncio.sleep(0.2)


def gaps_ms(arrivals: list[float]) -> list[float]:
    return [(b - a) * 1000 for a, b in itertools.pairwise(arrivals)]


async def direct_turn(c: httpx.AsyncClient, fake: str) -> list[float]:
    body = {
        "model": "fake",
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    arrivals: list[float] = []
    async with c.stream("POST", f"{fake}/v1/chat/completions", json=body) as r:
        async for line in r.aiter_lines():
            if line.startswith("data:") and '"content": "t' in line:
                arrivals.append(time.perf_counter())
    return arrivals


async def haico_turn(
    c: httpx.AsyncClient, base: str, arrivals: list[float] | None = None
) -> tuple[list[float], bool]:
    """One conversation, one turn; `arrivals` (filled as tokens come) survives a cut-off."""
    # Titled up front: a conversation still on its default title gets a model-written
    # title after its first turn (one more model call, off the turn's path), which is
    # not the cost of a streamed turn (a researcher's conversation has many turns).
    created = await c.post(f"{base}/api/conversations", json={"title": "bench"})
    if created.status_code != 201:
        raise RuntimeError(f"create conversation: {created.status_code} {created.text[:300]}")
    tid = created.json()["thread_id"]
    arrivals = [] if arrivals is None else arrivals
    completed = False
    event = ""
    async with c.stream(
        "POST",
        f"{base}/api/conversations/{tid}/turns",
        json={"content": "tell me a story"},
    ) as r:
        async for line in r.aiter_lines():
            if line.startswith("event:"):
                event = line[6:].strip()
                completed = completed or event == "turn_completed"
            elif line.startswith("data:") and event == "token":
                # One event may carry several of the fake's tokens ("t17 t18 "): each
                # counts as arriving then (gaps of 0 inside a burst).
                at = time.perf_counter()
                arrivals.extend([at] * max(1, len(TOKEN.findall(line))))
    return arrivals, completed


def stats(all_gaps: list[float]) -> dict[str, float]:
    """p50/p99/max of the gaps; NaN when no turn saw two tokens (nothing to measure)."""
    if not all_gaps:
        return {"p50": math.nan, "p99": math.nan, "max": math.nan}
    return {
        "p50": median(all_gaps),
        "p99": percentile(all_gaps, 99),
        "max": max(all_gaps),
    }


async def run_size(
    n: int, base: str, fake: str, server_pids: list[int], proxy_pid: int | None = None
) -> dict[str, Any]:
    limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=n + 8)
    watched = [*server_pids, *([proxy_pid] if proxy_pid else [])]
    async with httpx.AsyncClient(timeout=120, limits=limits) as c:
        direct = await asyncio.gather(*(direct_turn(c, fake) for _ in range(n)))
        direct_gaps = [g for a in direct for g in gaps_ms(a)]
        cpu0, t0 = {p: cpu_seconds(p) for p in watched}, time.perf_counter()
        partial: list[list[float]] = [[] for _ in range(n)]
        tasks = [asyncio.create_task(haico_turn(c, base, partial[i])) for i in range(n)]
        done, pending = await asyncio.wait(tasks, timeout=TIME_LIMIT_S)
        wall = time.perf_counter() - t0
        used = {p: cpu_seconds(p) - cpu0[p] for p in watched}
        cpu = sum(used[p] for p in server_pids)
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        results: list[tuple[list[float], bool]] = []
        errors: list[str] = []
        for task, seen in zip(tasks, partial, strict=True):
            if task in done and task.exception() is None:
                results.append(task.result())
            else:
                results.append((seen, False))  # the tokens that did arrive still count
                if task in done:
                    errors.append(repr(task.exception())[:200])
    for error in sorted(set(errors)):
        print(f"  turn failed: {error}")
    haico_gaps = [g for a, _ in results for g in gaps_ms(a)]
    completed = sum(1 for a, ok in results if ok and len(a) >= TOKENS * 0.9)
    d, h = stats(direct_gaps), stats(haico_gaps)
    return {
        "conversations": n,
        "completed": completed,
        "tokens_seen": sum(len(a) for a, _ in results),
        "direct_p50_ms": d["p50"],
        "direct_p99_ms": d["p99"],
        "haico_p50_ms": h["p50"],
        "haico_p99_ms": h["p99"],
        "haico_max_ms": h["max"],
        "p99_above_ms": h["p99"] - d["p99"],  # NaN (a failed check) when nothing arrived
        "cpu_ms_per_turn": cpu * 1000 / n,
        "peak_rss_mb": max(peak_rss_mb(p) for p in server_pids),
        "proxy_cpu_ms_per_turn": used[proxy_pid] * 1000 / n if proxy_pid else math.nan,
        "setup": f"{len(server_pids)} replicas + Caddy" if proxy_pid else "1 process",
        "wall_s": wall,
        "cut_off": bool(pending),
    }


def start_server(port: int, env: dict[str, str], data_dir: str) -> subprocess.Popen[bytes]:
    return spawn(
        [sys.executable, "-m", "haico.cli.main", "serve", "--port", str(port)],
        cwd=ROOT / "backend",
        env={**env, "HAICO_DATA_DIR": data_dir},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def through_proxy(
    replicas: int, sizes: list[int], env: dict[str, str], tmp: str, fake_url: str
) -> list[dict[str, Any]]:
    """The sizes again, through Caddy on deploy/Caddyfile in front of `replicas`
    processes on the same database."""
    caddy = shutil.which("caddy")
    if caddy is None:
        raise RuntimeError("--replicas needs Caddy (`make caddy`)")
    ports = [free_port() for _ in range(replicas)]
    procs = [start_server(p, env, f"{tmp}/replica-{p}") for p in ports]
    proxy_port = free_port()
    try:
        for port, proc in zip(ports, procs, strict=True):
            await wait_http(f"http://127.0.0.1:{port}/api/health", proc)
        upstreams = " ".join(f"127.0.0.1:{p}" for p in ports)
        proxy = spawn(
            [
                caddy,
                "run",
                "--config",
                str(ROOT / "deploy" / "Caddyfile"),
                "--adapter",
                "caddyfile",
            ],
            env={
                "PATH": os.environ.get("PATH", ""),
                "HOME": tmp,
                "XDG_DATA_HOME": f"{tmp}/caddy",
                "XDG_CONFIG_HOME": f"{tmp}/caddy",
                "HAICO_PROXY_PORT": str(proxy_port),
                "HAICO_UPSTREAMS": f"to {upstreams}",
            },
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        procs.append(proxy)
        base = f"http://127.0.0.1:{proxy_port}"
        await wait_http(f"{base}/api/health", proxy)
        async with httpx.AsyncClient(timeout=120) as c:  # warm-up: one turn per replica
            await asyncio.gather(*(haico_turn(c, base) for _ in ports))
        pids = [p.pid for p in procs[:-1]]
        return [await run_size(n, base, fake_url, pids, proxy.pid) for n in sizes]
    finally:
        stop(procs)


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


async def run(sizes: list[int], replicas: int = 0) -> int:
    name = f"bench_{uuid.uuid4().hex[:16]}"
    await admin(f'CREATE DATABASE "{name}"')
    fake_port, port = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []
    try:
        with tempfile.TemporaryDirectory(prefix="haico-bench-") as tmp:
            fake = spawn(
                [
                    *(
                        sys.executable,
                        "-m",
                        "bench.fake_openai",
                        "--port",
                        str(fake_port),
                    ),
                    *("--tokens", str(TOKENS), "--rate", str(RATE)),
                ],
                cwd=ROOT,
            )
            procs.append(fake)
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("HAICO_")},
                "HAICO_DATABASE_URL": ADMIN_URL.rsplit("/", 1)[0] + f"/{name}",
                "HAICO_DATA_DIR": tmp,
                "HAICO_LLM": "openai",
                "HAICO_LLM_BASE_URL": f"http://127.0.0.1:{fake_port}/v1",
                "HAICO_LLM_API_KEY": "bench",
                "HAICO_LLM_MODEL": "fake-paced",
                "HAICO_SECRET_KEY": "bench",
            }
            server = start_server(port, env, tmp)
            procs.append(server)
            base = f"http://127.0.0.1:{port}"
            await wait_http(f"http://127.0.0.1:{fake_port}/health", fake)
            await wait_http(f"{base}/api/health", server)
            async with httpx.AsyncClient(timeout=120) as c:  # warm-up: one turn
                await haico_turn(c, base)
            fake_url = f"http://127.0.0.1:{fake_port}"
            rows = [await run_size(n, base, fake_url, [server.pid]) for n in sizes]
            pg = ADMIN_URL.rsplit("/", 1)[0] + f"/{name}"
            for row in rows:  # the floor, with HAICO's server idle
                bare = await bare_cpu(row["conversations"], fake_url, pg)
                row["bare_stock_ms"], row["bare_lean_ms"] = bare["stock"], bare["lean"]
                row["cpu_over_bare"] = row["cpu_ms_per_turn"] / min(bare.values())
            if replicas:
                stop([procs.pop()])  # the one process: its CPU is free for the replicas
                rows += await through_proxy(replicas, sizes, env, tmp, fake_url)
    finally:
        stop(procs)
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    print(f"\n{TOKENS} tokens at {RATE:.0f} tokens/s per turn (nominal gap {1000 / RATE:.0f} ms)")
    print_table(
        rows,
        [
            ("setup", "setup"),
            ("N", "conversations"),
            ("completed", "completed"),
            ("direct p50", "direct_p50_ms"),
            ("direct p99", "direct_p99_ms"),
            ("HAICO p50", "haico_p50_ms"),
            ("HAICO p99", "haico_p99_ms"),
            ("p99 above", "p99_above_ms"),
            ("CPU ms/turn", "cpu_ms_per_turn"),
            ("bare stock", "bare_stock_ms"),
            ("bare lean", "bare_lean_ms"),
            ("x bare", "cpu_over_bare"),
            ("peak MB", "peak_rss_mb"),
            ("Caddy ms/turn", "proxy_cpu_ms_per_turn"),
            ("wall s", "wall_s"),
            ("cut off", "cut_off"),
        ],
    )
    first = rows[0]
    checks = {
        f"all_{first['conversations']}_turns_complete": first["completed"]
        == first["conversations"],
        f"p99_gap_le_{MAX_P99_ABOVE_MS:.0f}ms_above_baseline": first["p99_above_ms"]
        <= MAX_P99_ABOVE_MS,
        f"cpu_per_turn_le_{MAX_CPU_OVER_BARE:.0f}x_bare_langgraph": first["cpu_over_bare"]
        <= MAX_CPU_OVER_BARE,
    }
    large = next(
        (r for r in rows if r["conversations"] == LARGE_N and r["setup"] == "1 process"),
        None,
    )
    if large is not None:
        checks[f"all_{LARGE_N}_turns_complete"] = large["completed"] == LARGE_N
        checks[f"p99_gap_{LARGE_N}_le_{MAX_P99_ABOVE_MS_LARGE:.0f}ms_above_baseline"] = (
            large["p99_above_ms"] <= MAX_P99_ABOVE_MS_LARGE
        )
    figures = []
    for row in rows:
        n = row["conversations"]
        checked = row is first or row is large
        gap_target = MAX_P99_ABOVE_MS if row is first else MAX_P99_ABOVE_MS_LARGE
        label = f"{n}" if row["setup"] == "1 process" else f"{n} ({row['setup']})"
        figures += [
            {
                "figure": f"turns completed, {label} conversations at once "
                f"(within {TIME_LIMIT_S:.0f} s; nominal turn length {TOKENS / RATE:.0f} s; "
                f"took {row['wall_s']:.0f} s)",
                "target": f"{n}" if checked else "reported",
                "measured": f"{row['completed']}",
                "baseline": "-",
                "ok": row["completed"] == n if checked else None,
            },
            {
                "figure": f"p99 gap between tokens, {label} conversations",
                "target": f"<= baseline p99 + {gap_target:.0f} ms" if checked else "reported",
                "measured": f"{row['haico_p99_ms']:.1f} ms (p50 {row['haico_p50_ms']:.1f} ms)",
                "baseline": f"{row['direct_p99_ms']:.1f} ms (p50 {row['direct_p50_ms']:.1f} ms), "
                "the same client reading the fake directly",
                "ok": row["p99_above_ms"] <= gap_target if checked else None,
            },
        ]
        if "cpu_over_bare" in row:
            bare = min(row["bare_stock_ms"], row["bare_lean_ms"])
            cpu_checked = row is first
            figures.append(
                {
                    "figure": f"backend CPU time per turn, {label} conversations",
                    "target": f"<= {MAX_CPU_OVER_BARE:.0f}x bare LangGraph"
                    if cpu_checked
                    else "reported",
                    "measured": f"{row['cpu_ms_per_turn']:.0f} ms "
                    f"({row['cpu_over_bare']:.2f}x); peak memory {row['peak_rss_mb']:.0f} MB",
                    "baseline": f"{bare:.0f} ms, a bare LangGraph graph streaming the same "
                    f"fake (langchain-openai's client {row['bare_stock_ms']:.0f} ms, "
                    f"HAICO's lean client {row['bare_lean_ms']:.0f} ms)",
                    "ok": row["cpu_over_bare"] <= MAX_CPU_OVER_BARE if cpu_checked else None,
                }
            )
        else:
            figures.append(
                {
                    "figure": f"backend CPU time per turn, {label} conversations",
                    "target": "reported",
                    "measured": f"{row['cpu_ms_per_turn']:.0f} ms",
                    "baseline": "-",
                    "ok": None,
                }
            )
    return report("concurrency", checks, rows=rows, figures=figures)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default=f"{TARGET_N},256")
    parser.add_argument(
        "--replicas",
        type=int,
        default=0,
        help="also run the sizes through Caddy and K replicas",
    )
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    sys.exit(asyncio.run(run(sizes, args.replicas)))


if __name__ == "__main__":
    main()
