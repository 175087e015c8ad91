"""Where a streamed turn's CPU goes: one `haico serve` under N streams, sampled.

Run from the repository root (needs `py-spy`: `.venv/bin/pip install py-spy`):
`.venv/bin/python -m bench.profile_streams [--n 64] [--out DIR]`.

The same setup as `bench.concurrency` (the paced fake, one server on a fresh PostgreSQL
database, N conversations sending one turn each at once). py-spy samples the server
process (100 Hz, with idle frames left out) for as long as the turns run. Each sample
is charged to a part of the turn's path, found by walking its stack from the innermost
frame outwards until a frame belongs to a known part (`PARTS`, first match wins): so
`json.dumps` called by the SSE encoder counts as SSE encoding, and what no part claims
is "other". Prints the split (share of the samples and CPU ms per turn) and leaves the
raw stacks in `--out` (flamegraph-ready, `py-spy`'s collapsed format).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

import httpx

from bench.common import ADMIN_URL, admin, print_table
from bench.concurrency import (
    RATE,
    ROOT,
    TOKENS,
    cpu_seconds,
    free_port,
    haico_turn,
    spawn,
    start_server,
    stop,
    wait_http,
)

# (part, substrings of a frame "function (file:line)"); checked in this order per frame.
PARTS: list[tuple[str, tuple[str, ...]]] = [
    ("delta coalescer", ("events/coalescer.py",)),
    ("action log writes", ("events/log.py", "events/actions.py")),
    ("AHP fan-out", ("haico/ahp/",)),
    ("SSE encoding", ("fastapi/sse", "sse_starlette", "api/turns.py", "event_stream.py")),
    ("our token path", ("services/running_turn.py", "services/turns.py", "agent/graph.py")),
    ("upstream HTTP + parsing", ("httpx/", "httpcore/", "h11/", "openai/", "openai_stream.py")),
    ("LangChain/LangGraph callbacks", ("langchain_core/", "langgraph/", "langchain_openai/")),
    ("database", ("sqlalchemy/", "asyncpg/", "psycopg", "aiosqlite/")),
    ("HTTP serving", ("uvicorn/", "starlette/", "fastapi/", "httptools")),
    ("event loop", ("asyncio/", "uvloop", "selectors.py")),
]


def part_of(stack: list[str]) -> str:
    for frame in reversed(stack):  # innermost first
        for part, marks in PARTS:
            if any(mark in frame for mark in marks):
                return part
    return "other"


def split(collapsed: Path) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()
    for line in collapsed.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if stack and n.isdigit():
            counts[part_of(stack.split(";"))] += int(n)
    return counts


async def run(n: int, out: Path, py_spy: str) -> None:
    name = f"bench_{uuid.uuid4().hex[:16]}"
    await admin(f'CREATE DATABASE "{name}"')
    fake_port, port = free_port(), free_port()
    procs: list[subprocess.Popen[bytes]] = []
    collapsed = out / f"streams-{n}.txt"
    try:
        with tempfile.TemporaryDirectory(prefix="haico-profile-") as tmp:
            fake = spawn(
                [
                    *(sys.executable, "-m", "bench.fake_openai", "--port", str(fake_port)),
                    *("--tokens", str(TOKENS), "--rate", str(RATE)),
                ],
                cwd=ROOT,
            )
            procs.append(fake)
            env = {
                **{k: v for k, v in os.environ.items() if not k.startswith("HAICO_")},
                "HAICO_DATABASE_URL": ADMIN_URL.rsplit("/", 1)[0] + f"/{name}",
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
            limits = httpx.Limits(max_connections=n + 8, max_keepalive_connections=n + 8)
            async with httpx.AsyncClient(timeout=120, limits=limits) as c:
                await haico_turn(c, base)  # warm-up
                sampler = spawn(
                    [
                        *(py_spy, "record", "--pid", str(server.pid), "--rate", "100"),
                        *("--format", "raw", "--output", str(collapsed), "--nonblocking"),
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                await asyncio.sleep(1.0)  # attached
                cpu0 = cpu_seconds(server.pid)
                await asyncio.gather(*(haico_turn(c, base) for _ in range(n)))
                cpu = cpu_seconds(server.pid) - cpu0
                sampler.send_signal(2)  # SIGINT: py-spy writes its file and exits
                sampler.wait(timeout=60)
    finally:
        stop(procs)
        await admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    counts = split(collapsed)
    total = sum(counts.values()) or 1
    per_turn = cpu * 1000 / n
    rows = [
        {"part": part, "share": f"{k / total:.1%}", "ms_per_turn": per_turn * k / total}
        for part, k in counts.most_common()
    ]
    print(f"\n{n} streams, server CPU {per_turn:.1f} ms per turn, {total} samples ({collapsed})")
    print_table(rows, [("part", "part"), ("share", "share"), ("ms/turn", "ms_per_turn")])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=64)
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "haico-profile")
    args = parser.parse_args()
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    if not Path(py_spy).exists():
        raise SystemExit("bench.profile_streams needs py-spy: .venv/bin/pip install py-spy")
    args.out.mkdir(parents=True, exist_ok=True)
    asyncio.run(run(args.n, args.out, py_spy))


if __name__ == "__main__":
    main()
