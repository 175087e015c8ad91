"""The soak run's shared pieces: its constants and vocabulary, the bookkeeping of
outcomes, and the server-side measurements (memory, CPU, log) (see `bench.soak`)."""

from __future__ import annotations

import asyncio
import json
import os
import random
import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx

from bench.concurrency import cpu_seconds

EXPECTED_409 = {"turn_in_progress", "conflict", "checkout_would_discard_changes"}
SAMPLE_EVERY_S = 10.0
RSS_TARGET = 0.10
RSS_STEADY_TARGET = 0.02
SHARED_P = 0.10  # an operation on another researcher's family
WORDS = [
    "sources",
    "methods",
    "sampling",
    "bias",
    "baseline",
    "ablation",
    "replication",
    "dataset",
    "survey",
    "interview",
    "coding",
    "codebook",
    "variance",
    "effect",
    "prior",
    "posterior",
    "estimate",
    "threats",
    "validity",
    "timeline",
    "budget",
    "outline",
    "abstract",
    "related-work",
    "figures",
    "appendix",
]


def words(n: int) -> str:
    return " ".join(random.choice(WORDS) for _ in range(n))


def node_thread(node_id: str) -> str:
    return node_id.rsplit(":", 1)[0]


# ---- the server's memory ----


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            text = (task / "children").read_text().split()
            out.extend(int(c) for c in text)
    except OSError:
        pass
    return out


def tree_rss_mb(pid: int) -> float:
    """VmRSS of the process and all its descendants (the workers of `--workers N`)."""
    try:
        import psutil  # type: ignore[import-untyped]

        proc = psutil.Process(pid)
        procs = [proc, *proc.children(recursive=True)]
        return sum(p.memory_info().rss for p in procs) / 2**20
    except ImportError:
        pass
    total_kb, todo, seen = 0, [pid], set()
    while todo:
        p = todo.pop()
        if p in seen:
            continue
        seen.add(p)
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total_kb += int(line.split()[1])
        except OSError:
            continue
        todo.extend(_children(p))
    return total_kb / 1024


def tree_cpu_s(pid: int) -> float:
    total, todo = 0.0, [pid]
    while todo:
        p = todo.pop()
        try:
            total += cpu_seconds(p)
        except OSError:
            continue
        todo.extend(_children(p))
    return total


# ---- bookkeeping ----


@dataclass
class OpStats:
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    expected: Counter[str] = field(default_factory=Counter)


@dataclass
class Stats:
    ops: dict[str, OpStats] = field(default_factory=lambda: defaultdict(OpStats))
    turns_completed: int = 0
    sse_events: int = 0
    error_samples: list[str] = field(default_factory=list)

    def ok(self, op: str, ms: float) -> None:
        self.ops[op].latencies.append(ms)

    def expected(self, op: str, ms: float, what: str) -> None:
        self.ops[op].latencies.append(ms)
        self.ops[op].expected[what] += 1

    def error(self, op: str, ms: float, what: str) -> None:
        self.ops[op].latencies.append(ms)
        self.ops[op].errors += 1
        if len(self.error_samples) < 200:
            self.error_samples.append(f"{time.strftime('%H:%M:%S')} {op}: {what}")


@dataclass
class Family:
    root: str
    owner: int
    head: str | None = None
    working: str = ""
    drafts: set[str] = field(default_factory=set)  # restored drafts this client saw
    last_seq: int = 0


def error_code(r: httpx.Response) -> str:
    try:
        return str(r.json().get("code", ""))
    except (ValueError, AttributeError):
        return ""


def parse_sse(text: str) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        name, data = "message", []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            try:
                events.append((name, json.loads("\n".join(data))))
            except ValueError:
                events.append((name, "\n".join(data)))
    return events


async def sample(pid: int, samples: list[tuple[float, float, float]], t0: float) -> None:
    while True:
        samples.append((time.monotonic() - t0, tree_rss_mb(pid), os.getloadavg()[0]))
        await asyncio.sleep(SAMPLE_EVERY_S)


def _window_mean(samples: list[tuple[float, float, float]], lo: float, hi: float) -> float:
    values = [rss for t, rss, _ in samples if lo <= t <= hi]
    return sum(values) / len(values) if values else float("nan")


# How often the soak's server logs its memory (`HAICO_MEMORY_REPORT_SECONDS`).
MEMORY_REPORT_EVERY_S = 10.0
# From each `haico.memory` line: the anonymous and file-backed parts of the RSS, and
# jemalloc's live (`allocated`), held (`resident`) and kept-unused (`retained`) bytes.
ALLOCATOR_FIGURES = ("anon", "file", "allocated", "resident", "retained")


def allocator_series(path: Path, t0_wall: float) -> dict[str, list[tuple[float, float, float]]]:
    """The server's `haico.memory` log lines as samples (seconds since `t0_wall`, MB,
    0.0) per figure, added up over its processes (one report of each per period);
    {} when the server logged none (it does not run on jemalloc: RSS only)."""
    slots: dict[str, dict[int, dict[str, float]]] = {}
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    for line in lines:
        head, sep, rest = line.partition(" haico.memory memory ")
        if not sep:
            continue
        try:
            stamp = datetime.strptime(head.split(" INFO")[0], "%Y-%m-%d %H:%M:%S,%f").timestamp()
        except ValueError:
            continue
        words = dict(w.split("=", 1) for w in rest.split() if "=" in w)
        slot = round((stamp - t0_wall) / MEMORY_REPORT_EVERY_S)
        for name in ALLOCATOR_FIGURES:
            if name in words:
                per_pid = slots.setdefault(name, {}).setdefault(slot, {})
                per_pid[words["pid"]] = float(words[name].removesuffix("MB"))
    return {
        name: [
            (slot * MEMORY_REPORT_EVERY_S, sum(v.values()), 0.0) for slot, v in sorted(by.items())
        ]
        for name, by in slots.items()
    }


def server_log_problems(path: Path, limit: int = 40) -> list[str]:
    """The log lines that show a server-side failure (tracebacks, ERROR, 5xx)."""
    out: list[str] = []
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return out
    for i, line in enumerate(lines):
        if (
            " ERROR " in line
            or "Traceback" in line
            or '" 500' in line
            or '" 502' in line
            or '" 503' in line
        ):
            out.append(line[:400])
            if "Traceback" in line:
                out.extend(x[:400] for x in lines[i + 1 : i + 30])
        if len(out) >= limit:
            break
    return out
