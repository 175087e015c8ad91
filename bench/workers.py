"""Scale-out benchmark: `haico serve --workers 2` against one worker, in one run.

Run from the repository root: `.venv/bin/python -m bench.workers`.

The offline model on PostgreSQL. For each worker count (1, then 2; each on its own
fresh database) CONVERSATIONS conversations send TURNS_EACH turns each, the
conversations all at once and each one's turns one after another, through HTTP from
one client process. Throughput is turns per second over the whole run, after a
warm-up of the same shape and length (every conversation sends WARMUP_TURNS turns
first): a worker opens its pooled connections as the load it sees needs them, and
each new one costs a PostgreSQL backend and the preparing of every statement anew.
After a warm-up of 8 single turns, a two-worker run was seen opening 16 connections
inside the measured window, and its CPU per turn rose by a fifth; the measured
window is meant to show the steady state a deployment runs in. The table lists the
PostgreSQL connections opened during each measured run.

The pair (1 worker, then 2) is measured ROUNDS times, alternating, and the figure is
the median of the pairs' ratios: on a shared machine one pair alone has been seen
anywhere from 1.07x to 1.68x, and the same one-worker run anywhere from 22 to 35
turns/s within two minutes (its CPU per turn moving with it, from 28 to 44 ms).

The servers, PostgreSQL and the client share the machine's cores, so the benchmark
also counts, from /proc, the CPU time per turn of each: the server processes, every
PostgreSQL process, and the client itself. With one worker the server is the
bottleneck (one process, one core); two workers can at best use all the cores for the
three together, which bounds the gain at cores x server / (server + PostgreSQL +
client) CPU per turn: the output prints that bound beside the ratio.

Target: 2 workers reach >= 85% of that bound (`judge`): each round's ratio is taken
as a share of the bound from that round's own one-worker run, and the median share
over the rounds must reach MIN_SHARE_OF_BOUND. A fixed ratio (1.6x, the target until
2026-12-03) measured the machine as much as the code: on 2 shared cores the bound
itself is 1.49-1.57x. The client is a
minimal HTTP/1.1 client over asyncio streams (`LiteClient`, a connection per
request), so that the load generator takes as little of the shared CPU as
it can.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import ADMIN_URL, admin, print_table, report
from bench.concurrency import ROOT, free_port, spawn, wait_http

CONVERSATIONS = 16
TURNS_EACH = 12
WARMUP_TURNS = TURNS_EACH
MIN_SHARE_OF_BOUND = 0.85
ROUNDS = 5


class LiteClient:
    """A minimal HTTP/1.1 client: POST a JSON body, read the whole answer (with a
    Content-Length or chunked, as the server's SSE is). Each request has a connection
    of its own (`Connection: close`): the worker processes share one listening socket,
    and a connection kept alive stays with the worker that accepted it, so 16 of them
    opened at once could leave one worker with most of the conversations; a new
    connection per request goes to whichever worker accepts first, i.e. the less busy
    one, as a proxy in front of the workers would spread them."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._streams: tuple[asyncio.StreamReader, asyncio.StreamWriter] | None = None

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
        if self._streams is None:
            self._streams = await asyncio.open_connection("127.0.0.1", self.port)
        reader, writer = self._streams
        data = json.dumps(body).encode()
        writer.write(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode()
            + data
        )
        # The server closes the connection after the answer: read it to the end in as
        # few awaits as the socket allows, then take it apart without any.
        raw = bytearray()
        while chunk := await reader.read(1 << 16):
            raw += chunk
        status, answer = parse_response(bytes(raw))
        await self.close()
        return status, answer

    async def close(self) -> None:
        if self._streams is not None:
            self._streams[1].close()
            self._streams = None


def parse_response(raw: bytes) -> tuple[int, bytes]:
    """The status and the body of a whole HTTP/1.1 answer (Content-Length or chunked)."""
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines[1:])}
    if "content-length" in headers:
        return status, body[: int(headers["content-length"])]
    parts: list[bytes] = []
    at = 0
    while True:
        end = body.index(b"\r\n", at)
        size = int(body[at:end].split(b";")[0], 16)
        if size == 0:
            return status, b"".join(parts)
        parts.append(body[end + 2 : end + 2 + size])
        at = end + 2 + size + 2


async def conversation(port: int, turns: int, label: str) -> int:
    c = LiteClient(port)
    try:
        _, created = await c.post("/api/conversations", {"title": label})
        tid = json.loads(created)["thread_id"]
        done = 0
        for i in range(turns):
            status, answer = await c.post(
                f"/api/conversations/{tid}/turns",
                {"content": f"todo: {label} item {i}; prefer: point {i}"},
            )
            if status == 200 and b"event: turn_completed" in answer:
                done += 1
        return done
    finally:
        await c.close()


def _stat(pid: str) -> tuple[str, int, float]:
    """(command name, parent pid, CPU seconds) of a process."""
    raw = Path(f"/proc/{pid}/stat").read_text()
    name = raw[raw.index("(") + 1 : raw.rindex(")")]
    fields = raw.rsplit(")", 1)[1].split()
    return name, int(fields[1]), (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _processes() -> dict[int, tuple[str, int, float]]:
    procs: dict[int, tuple[str, int, float]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                procs[int(entry.name)] = _stat(entry.name)
            except (OSError, ValueError):
                continue
    return procs


def postgres_pids() -> set[int]:
    """The PostgreSQL processes now: a new one is a new connection's backend."""
    return {pid for pid, (name, _, _) in _processes().items() if name.startswith("postgres")}


def cpu_by_group(server_pid: int) -> dict[str, float]:
    """CPU seconds so far of the server's process tree and of all PostgreSQL processes
    (the backends of every worker's connections; those that exited are not counted)."""
    procs = _processes()
    tree = {server_pid}
    grew = True
    while grew:
        grew = False
        for pid, (_, parent, _) in procs.items():
            if parent in tree and pid not in tree:
                tree.add(pid)
                grew = True
    return {
        "server": sum(procs[p][2] for p in tree if p in procs),
        "postgres": sum(cpu for name, _, cpu in procs.values() if name.startswith("postgres")),
    }


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
                    *(sys.executable, "-m", "haico.cli.main", "serve", "--port", str(port)),
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
                await asyncio.gather(
                    *(conversation(port, WARMUP_TURNS, f"warm{i}") for i in range(CONVERSATIONS))
                )
                backends = postgres_pids()
                before, client0 = cpu_by_group(server.pid), time.process_time()
                start = time.perf_counter()
                done = await asyncio.gather(
                    *(conversation(port, TURNS_EACH, f"c{i}") for i in range(CONVERSATIONS))
                )
                seconds = time.perf_counter() - start
                after, client = cpu_by_group(server.pid), time.process_time() - client0
                opened = len(postgres_pids() - backends)
            finally:
                server.terminate()
                try:
                    server.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    server.kill()
    finally:
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    turns = sum(done)
    per_turn = {k: (after[k] - before[k]) * 1000 / max(turns, 1) for k in after}
    return {
        "workers": workers,
        "turns": turns,
        "expected": CONVERSATIONS * TURNS_EACH,
        "seconds": seconds,
        "turns_per_s": turns / seconds,
        "server_cpu_ms": per_turn["server"],
        "postgres_cpu_ms": per_turn["postgres"],
        "client_cpu_ms": client * 1000 / max(turns, 1),
        "new_connections": opened,
    }


def _bound(one: dict[str, Any], cores: int) -> float:
    """The best 2 workers could do against `one` on this machine: with one worker the
    server process is the bottleneck; with all cores in use the three share them."""
    total = one["server_cpu_ms"] + one["postgres_cpu_ms"] + one["client_cpu_ms"]
    return min(2.0, cores * one["server_cpu_ms"] / total) if total else float("nan")


@dataclass(frozen=True)
class Verdict:
    """The median round by share of its bound, that share, and whether it passes."""

    share: float
    round: dict[str, float]
    ok: bool


def share_of_bound(r: dict[str, float]) -> float:
    """A round's ratio as a share of its own bound (0 when there is no bound)."""
    bound = r["bound"]
    return r["ratio"] / bound if bound > 0 else 0.0  # a NaN bound compares False


def judge(rounds: Sequence[dict[str, float]]) -> Verdict:
    """The verdict over the rounds (`ratio` and `bound` each): the median of the
    rounds' shares of their bounds (the upper one of an even count) must reach
    `MIN_SHARE_OF_BOUND`."""
    ordered = sorted(rounds, key=share_of_bound)
    median = ordered[len(ordered) // 2]
    share = share_of_bound(median)
    return Verdict(share, median, share >= MIN_SHARE_OF_BOUND)


async def run() -> int:
    cores = os.cpu_count() or 1
    rows: list[dict[str, Any]] = []
    rounds: list[dict[str, float]] = []
    # 1 then 2 workers, ROUNDS times: the machine's load drifts, and a pair measured
    # side by side shares it. The figure is the median of the pairs' ratios.
    for n in range(ROUNDS):
        one = await measure(1)
        two = await measure(2)
        rows += [{"round": n + 1, **one}, {"round": n + 1, **two}]
        rounds.append(
            {
                "ratio": two["turns_per_s"] / one["turns_per_s"],
                "bound": _bound(one, cores),
                "one": one["turns_per_s"],
                "two": two["turns_per_s"],
            }
        )
    verdict = judge(rounds)
    median = verdict.round
    ratio, bound = median["ratio"], median["bound"]
    cpu = {
        k: statistics.median(r[k] for r in rows if r["workers"] == 1)
        for k in ("server_cpu_ms", "postgres_cpu_ms", "client_cpu_ms")
    }
    print(f"\n{CONVERSATIONS} conversations x {TURNS_EACH} turns, offline model, PostgreSQL")
    print(f"cores on this machine: {cores} (servers, PostgreSQL and the client share them)")
    print_table(
        rows,
        [
            ("round", "round"),
            ("workers", "workers"),
            ("turns", "turns"),
            ("seconds", "seconds"),
            ("turns/s", "turns_per_s"),
            ("server CPU ms/turn", "server_cpu_ms"),
            ("PostgreSQL CPU ms/turn", "postgres_cpu_ms"),
            ("client CPU ms/turn", "client_cpu_ms"),
            ("new PostgreSQL connections", "new_connections"),
        ],
    )
    target = f">= {MIN_SHARE_OF_BOUND:.0%} of the bound"
    each = ", ".join(
        f"{r['ratio']:.2f} (bound {r['bound']:.2f}, {share_of_bound(r):.0%})" for r in rounds
    )
    print(f"ratio 2/1 by round: {each}")
    print(
        f"median round: ratio {ratio:.2f}, {verdict.share:.1%} of its bound {bound:.2f} "
        f"(target {target}, measured in the same round)"
    )
    print("bound: cores x server / (server + PostgreSQL + client) CPU per turn, 1 worker")
    checks = {
        "every_turn_completed": all(r["turns"] == r["expected"] for r in rows),
        f"2_workers_ge_{MIN_SHARE_OF_BOUND * 100:.0f}pct_of_bound": verdict.ok,
    }
    figures = [
        {
            "figure": f"throughput, 2 workers vs 1, as a share of the bound the machine "
            f"allows ({CONVERSATIONS} conversations at once, offline model, PostgreSQL, "
            f"{cores} cores; median of {ROUNDS} rounds)",
            "target": target,
            "measured": f"{verdict.share:.1%}: {ratio:.2f}x against {bound:.2f}x "
            f"({median['two']:.1f} turns/s; rounds: "
            + ", ".join(f"{share_of_bound(r):.0%} of {r['bound']:.2f}x" for r in rounds)
            + ")",
            "baseline": f"1 worker: {median['one']:.1f} turns/s",
            "ok": verdict.ok,
        },
        {
            "figure": "the bound: cores x server / (server + PostgreSQL + client) CPU per "
            "turn with 1 worker, in the same round",
            "target": "reported",
            "measured": f"{bound:.2f}x (medians over the rounds: server "
            f"{cpu['server_cpu_ms']:.1f} ms, PostgreSQL {cpu['postgres_cpu_ms']:.1f} ms, "
            f"client {cpu['client_cpu_ms']:.1f} ms per turn)",
            "baseline": "-",
            "ok": None,
        },
    ]
    return report(
        "workers",
        checks,
        rows=rows,
        rounds=rounds,
        ratio=ratio,
        cores=cores,
        bound=bound,
        share_of_bound=verdict.share,
        figures=figures,
    )


def main() -> None:
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
