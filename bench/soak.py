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
turns/s; the RSS of the server's process tree sampled every 10 s (first minute's
mean against the last minute's, target: < 10% growth); the load average.

At the end, for every family: the history's head is a node of the graph, the
working thread's tip is the head (or the working thread is the head's draft), no
turn is active and no node is still `running`; and `GET /api/conversations` lists
no draft. Exit status 1 when there was an error or an invariant failed.

The server's log is kept (its path is printed) for looking into any error.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.common import ADMIN_URL, admin, median, percentile, print_table, report
from bench.concurrency import ROOT, cpu_seconds, free_port, spawn, wait_http

EXPECTED_409 = {"turn_in_progress", "conflict", "checkout_would_discard_changes"}
SAMPLE_EVERY_S = 10.0
RSS_TARGET = 0.10
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


class Researcher:
    def __init__(self, n: int, base: str, stats: Stats, families: list[Family], end: float) -> None:
        self.n = n
        self.base = base
        self.stats = stats
        self.all_families = families
        self.mine: list[Family] = []
        self.end = end
        self.c: httpx.AsyncClient

    # -- one request, classified --

    async def call(
        self,
        op: str,
        method: str,
        path: str,
        fam: Family | None = None,
        thread: str | None = None,
        ok: tuple[int, ...] = (200, 201, 204),
        **kw: Any,
    ) -> httpx.Response | None:
        """The response when it is a success; None (recorded) otherwise."""
        t0 = time.perf_counter()
        try:
            r = await self.c.request(method, f"{self.base}{path}", **kw)
        except httpx.HTTPError as e:
            ms = (time.perf_counter() - t0) * 1000
            self.stats.error(op, ms, f"{method} {path}: transport {type(e).__name__}: {e}")
            return None
        ms = (time.perf_counter() - t0) * 1000
        if r.status_code in ok:
            if op in ("send", "send_draft"):
                return self._turn(op, ms, method, path, r, fam)
            self.stats.ok(op, ms)
            return r
        await self._failure(op, ms, method, path, r, fam, thread)
        return None

    def _turn(
        self,
        op: str,
        ms: float,
        method: str,
        path: str,
        r: httpx.Response,
        fam: Family | None,
    ) -> httpx.Response | None:
        events = parse_sse(r.text)
        if not events or events[-1][0] != "turn_completed":
            last = events[-1] if events else ("(no event)", None)
            self.stats.error(op, ms, f"{method} {path}: stream ended with {str(last)[:300]}")
            return None
        self.stats.ok(op, ms)
        self.stats.turns_completed += 1
        node = events[-1][1].get("node_id") if isinstance(events[-1][1], dict) else None
        if fam is not None and node:
            fam.head = node
            fam.working = node_thread(node)
            fam.drafts.discard(fam.working)
        return r

    async def _failure(
        self,
        op: str,
        ms: float,
        method: str,
        path: str,
        r: httpx.Response,
        fam: Family | None,
        thread: str | None,
    ) -> None:
        code = error_code(r)
        if r.status_code == 409 and code in EXPECTED_409:
            self.stats.expected(op, ms, f"409 {code}")
            return
        if r.status_code == 404 and fam is not None and thread in fam.drafts:
            # A restored draft another researcher's checkout discarded: the history
            # must say it is no longer the working thread.
            h = await self.c.get(f"{self.base}/api/conversations/{fam.root}/history")
            if h.status_code == 200 and h.json()["working_thread_id"] != thread:
                fam.drafts.discard(thread)
                fam.head = h.json()["head_turn_id"]
                fam.working = h.json()["working_thread_id"]
                self.stats.expected(op, ms, "404 draft discarded")
                return
        self.stats.error(op, ms, f"{method} {path}: {r.status_code} {r.text[:300]}")

    # -- the mix --

    def pick_family(self) -> Family | None:
        if self.all_families and random.random() < SHARED_P:
            return random.choice(self.all_families)
        if not self.mine:
            return None
        return self.mine[-1] if random.random() < 0.5 else random.choice(self.mine)

    async def run(self) -> None:
        limits = httpx.Limits(max_connections=4, max_keepalive_connections=4)
        async with httpx.AsyncClient(timeout=300, limits=limits) as self.c:
            await asyncio.sleep(random.uniform(0, 2))
            await self.create()
            while time.monotonic() < self.end:
                await self.step()
                await asyncio.sleep(random.uniform(0.1, 1.0))

    async def step(self) -> None:
        if not self.mine or random.random() < 0.03:
            await self.create()
            return
        fam = self.pick_family()
        if fam is None:
            return
        if random.random() < 0.3:  # the client refetches the history state
            await self.read_history(fam)
        action = random.choices(
            (
                self.send,
                self.edit,
                self.branch,
                self.checkout,
                self.read_graph,
                self.read_workspace,
                self.read_messages,
                self.read_list,
                self.follow_events,
            ),
            weights=(30, 14, 5, 9, 8, 6, 6, 2, 2),
        )[0]
        await action(fam)

    async def create(self) -> None:
        r = await self.call(
            "create",
            "POST",
            "/api/conversations",
            json={"title": f"r{self.n} {words(3)}", "objective": words(6)},
        )
        if r is None:
            return
        tid = r.json()["thread_id"]
        fam = Family(root=tid, owner=self.n, working=tid)
        self.mine.append(fam)
        self.all_families.append(fam)

    def message(self) -> str:
        parts = []
        if random.random() < 0.3:
            parts.append(f"objective: {words(5)}")
        if random.random() < 0.6:
            parts.append(f"todo: {words(4)}")
        if random.random() < 0.5:
            parts.append(f"write: {words(12)}")
        if random.random() < 0.2:
            parts.append(f"prefer: {words(3)}")
        if not parts:
            return f"what should I read next about {words(3)}?"
        return "; ".join(parts)

    async def send(self, fam: Family) -> None:
        thread = fam.working or fam.root
        op = "send_draft" if thread in fam.drafts else "send"
        await self.call(
            op,
            "POST",
            f"/api/conversations/{thread}/turns",
            fam,
            thread,
            json={"content": self.message()},
        )

    async def edit(self, fam: Family) -> None:
        thread = fam.working or fam.root
        base = f"/api/conversations/{thread}"
        kind = random.choice(("objective", "todo", "preference", "document", "todo_done"))
        if kind == "objective":
            await self.call(
                "edit", "PUT", f"{base}/objective", fam, thread, json={"text": words(6)}
            )
        elif kind == "todo":
            await self.call("edit", "POST", f"{base}/todos", fam, thread, json={"text": words(4)})
        elif kind == "preference":
            await self.call(
                "edit",
                "POST",
                f"{base}/preferences",
                fam,
                thread,
                json={"text": words(4)},
            )
        elif kind == "document":
            body = {
                "title": words(2),
                "content": "\n".join(words(12) for _ in range(8)),
            }
            await self.call("edit", "PUT", f"{base}/document", fam, thread, json=body)
        else:
            ws = await self.call("workspace", "GET", f"{base}/workspace", fam, thread)
            todos = ws.json()["todos"] if ws is not None else []
            if todos:
                todo = random.choice(todos)
                await self.call(
                    "edit",
                    "PATCH",
                    f"{base}/todos/{todo['id']}",
                    fam,
                    thread,
                    json={"done": not todo["done"]},
                )

    async def read_history(self, fam: Family) -> dict[str, Any] | None:
        r = await self.call("history", "GET", f"/api/conversations/{fam.root}/history", fam)
        if r is None:
            return None
        h: dict[str, Any] = r.json()
        fam.head, fam.working = h["head_turn_id"], h["working_thread_id"]
        if fam.head is not None and node_thread(fam.head) != fam.working:
            fam.drafts.add(fam.working)
        return h

    async def read_graph(self, fam: Family) -> dict[str, Any] | None:
        r = await self.call("graph", "GET", f"/api/conversations/{fam.root}/graph", fam)
        if r is None:
            return None
        g: dict[str, Any] = r.json()
        fam.head = g["head_turn_id"]
        return g

    async def read_workspace(self, fam: Family) -> None:
        thread = fam.working or fam.root
        await self.call("workspace", "GET", f"/api/conversations/{thread}/workspace", fam, thread)

    async def read_messages(self, fam: Family) -> None:
        thread = fam.working or fam.root
        await self.call("messages", "GET", f"/api/conversations/{thread}/messages", fam, thread)

    async def read_list(self, fam: Family) -> None:
        await self.call("list", "GET", "/api/conversations")

    async def branch(self, fam: Family) -> None:
        g = await self.read_graph(fam)
        if g is None:
            return
        candidates = []
        for t in g["threads"]:
            lo = t["branch_point_turn"] or 0
            if not t["deleted"] and t["turn_index"] - lo >= 2:
                candidates.append((t["thread_id"], lo, t["turn_index"]))
        if not candidates:
            await self.send(fam)
            return
        thread, lo, hi = random.choice(candidates)
        await self.call(
            "branch",
            "POST",
            f"/api/conversations/{thread}/branch",
            fam,
            thread,
            json={"from_turn": random.randint(lo + 1, hi - 1), "reason": words(4)},
        )

    async def checkout(self, fam: Family) -> None:
        g = await self.read_graph(fam)
        if g is None:
            return
        nodes = [n["id"] for n in g["nodes"] if n["id"] != g["head_turn_id"]]
        if not nodes:
            await self.send(fam)
            return
        target = random.choice(nodes)
        path = f"/api/conversations/{fam.root}/checkout"
        body = {"turn_id": target, "expected_head_turn_id": g["head_turn_id"]}
        t0 = time.perf_counter()
        try:
            r = await self.c.post(f"{self.base}{path}", json=body)
        except httpx.HTTPError as e:
            ms = (time.perf_counter() - t0) * 1000
            self.stats.error("checkout", ms, f"POST {path}: transport {e!r}")
            return
        ms = (time.perf_counter() - t0) * 1000
        if r.status_code == 409 and error_code(r) == "checkout_would_discard_changes":
            self.stats.expected("checkout", ms, "409 checkout_would_discard_changes")
            if fam.owner != self.n:  # not ours to discard
                return
            r2 = await self.call("checkout_force", "POST", path, fam, json={**body, "force": True})
            if r2 is None:
                return
            r = r2
        elif r.status_code != 200:
            await self._failure("checkout", ms, "POST", path, r, fam, None)
            return
        else:
            self.stats.ok("checkout", ms)
        h = r.json()
        fam.head, fam.working = h["head_turn_id"], h["working_thread_id"]
        if fam.head is not None and node_thread(fam.head) != fam.working:
            fam.drafts.add(fam.working)
        # a researcher who restores an earlier state usually continues from it
        if fam.owner == self.n and random.random() < 0.6:
            await asyncio.sleep(random.uniform(0.1, 1.0))
            if random.random() < 0.4:
                await self.edit(fam)
            await self.send(fam)

    async def follow_events(self, fam: Family) -> None:
        path = f"/api/conversations/{fam.root}/events"
        seconds = random.uniform(2, 5)
        t0 = time.perf_counter()
        try:
            async with self.c.stream("GET", f"{self.base}{path}?after={fam.last_seq}") as r:
                ms = (time.perf_counter() - t0) * 1000
                if r.status_code != 200:
                    await r.aread()
                    await self._failure("events", ms, "GET", path, r, fam, None)
                    return
                self.stats.ok("events", ms)
                try:
                    async with asyncio.timeout(seconds):
                        async for line in r.aiter_lines():
                            if line.startswith("id:"):
                                fam.last_seq = max(fam.last_seq, int(line[3:].strip()))
                                self.stats.sse_events += 1
                except TimeoutError:
                    pass
        except httpx.HTTPError as e:
            ms = (time.perf_counter() - t0) * 1000
            self.stats.error("events", ms, f"GET {path}: transport {e!r}")


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
            running = [n for n, v in nodes.items() if v["state"] == "running"]
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


async def sample(pid: int, samples: list[tuple[float, float, float]], t0: float) -> None:
    while True:
        samples.append((time.monotonic() - t0, tree_rss_mb(pid), os.getloadavg()[0]))
        await asyncio.sleep(SAMPLE_EVERY_S)


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
            }
            server = spawn(
                [
                    *(sys.executable, "-m", "app.cli", "serve", "--port", str(port)),
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


def _window_mean(samples: list[tuple[float, float, float]], lo: float, hi: float) -> float:
    values = [rss for t, rss, _ in samples if lo <= t <= hi]
    return sum(values) / len(values) if values else float("nan")


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
    loads_seen = [ld for _, _, ld in samples]

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
    per_minute = [
        _window_mean(samples, m * 60, (m + 1) * 60 - 0.001) for m in range(int(seconds // 60) + 1)
    ]
    print("server RSS per minute (MB): " + " ".join(f"{x:.0f}" for x in per_minute if x == x))
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
        rss_samples=[(round(t), round(rss, 1)) for t, rss, _ in samples],
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
