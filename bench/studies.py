"""Studies benchmark: 60 participants joining at once, streaming turns at once with the
owner's dashboard following, and the researcher's reads of a 60 × 40 study.

Run from the repository root: `.venv/bin/python -m bench.studies` (PostgreSQL, then
SQLite; `python -m bench.studies postgres` runs one). `HAICO_BENCH_STUDIES=joins` runs
the first phase only.

One process per database, the app's services wired as its lifespan wires them
(`bench.common.Harness`: offline model, turn manager, event bus); no HTTP.

1. Joins: 60 joins at once on a two-condition study through the join queue the app
   wires (`join_queue.JoinQueue.join`, what `POST /api/studies/join` calls), from call
   to return. Every join gets a family, the groups differ by at most 1, p99 <= 200 ms.
   Baseline, same run: 60 plain families made at once (`conversations.create`), what
   a join does beside the study's own rows. Then one join at a time, on another
   study: through the queue it costs at most 5 ms more (p50) than made directly.
2. Streaming: the 60 participants send their turns at once (`TURNS` each, one after
   another per participant) while the dashboard follows the study's event stream
   (`study_events.follow`, what `GET /api/studies/{id}/events` serves, in the same
   process). Every turn must complete. Lag of an action = when the dashboard took it
   minus when the sender saw it happen (the join's return, the turn's
   `turn_completed`); p99 <= 500 ms. Baseline: the same lag for the family's own
   stream (`bus.stream` of one family) followed alongside, for one participant.
3. Reads of the 60 × 40 study: the participants table and the metrics (service
   calls, p50 of `REPEAT` after a warm-up) <= 200 ms each, with the number of SQL
   statements (constant in the number of participants); the study CSV streamed to
   the end <= 3 s (median of CSV_ROUNDS) and <= 50 MB growth of the process's RSS
   (sampled at every chunk, the largest of the rounds). Each read and its baseline
   run interleaved, after a warm-up round.
   Baselines: `analysis_export.count_nodes` over the same 60 families (a family read
   each) for the reads, and the analysis CSV of the same families
   (`analysis_export.stream_csv`) for the export.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from sqlalchemy import event

from bench.common import Harness, median, percentile, print_table, report, temp_settings
from haico.domain import LoggedAction
from haico.schemas.studies import StudyCreate
from haico.services.access.principal import Principal
from haico.services.families import conversations
from haico.services.reports import analysis_export
from haico.services.studies import joining, reports, study, study_events
from haico.services.studies.join_queue import JoinQueue

# Branch summaries are written in the background a while after turns: after 2400 turns
# they would be running through the reads measured here, which are not about them.
os.environ.setdefault("HAICO_SUMMARY_DEBOUNCE_SECONDS", "3600")

PARTICIPANTS = 60
TURNS = 40
REPEAT = 20
CSV_ROUNDS = 3
MAX_JOIN_P99_MS = 200.0
MAX_LAG_P99_MS = 500.0
MAX_READ_MS = 200.0
MAX_CSV_S = 3.0
MAX_CSV_RSS_MB = 50.0
LONE_JOINS = 20
MAX_LONE_EXTRA_MS = 5.0
ONLY_JOINS = os.environ.get("HAICO_BENCH_STUDIES") == "joins"
STEPS = (
    "objective: step {k}",
    "todo: item {k}",
    "prefer: short {k}",
    "write: Part {k}.",
)


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * 4096 / 2**20


async def timed(coro: Any) -> tuple[Any, float]:
    start = time.perf_counter()
    out = await coro
    return out, (time.perf_counter() - start) * 1000


async def joins(h: Harness) -> tuple[str, list[Any], dict[str, Any]]:
    body = StudyCreate.model_validate(
        {"name": "bench", "conditions": [{"name": "branching"}, {"name": "linear"}]}
    )
    made = await study.create(h.db, principal=h.principal, body=body)
    assert made.join_token is not None
    plain = await asyncio.gather(
        *(timed(conversations.create(h.db, principal=h.principal)) for _ in range(PARTICIPANTS))
    )
    queue = JoinQueue(h.db)
    joined = await asyncio.gather(
        *(timed(queue.join(made.join_token)) for _ in range(PARTICIPANTS))
    )
    lone = await lone_joins(h, queue)
    await queue.close()
    groups = Counter(j.condition.name for j, _ in joined)
    out = {
        "join_p50_ms": median([ms for _, ms in joined]),
        "join_p99_ms": percentile([ms for _, ms in joined], 99),
        "plain_p99_ms": percentile([ms for _, ms in plain], 99),
        "families": len({j.thread_id for j, _ in joined}),
        "groups": dict(groups),
        "spread": max(groups.values()) - min(groups.values()),
    }
    return made.id, [j for j, _ in joined], out | lone


async def lone_joins(h: Harness, queue: JoinQueue) -> dict[str, float]:
    """One join at a time, on a study of its own: through the queue, and straight
    through `joining.join` (the baseline), interleaved; p50 of LONE_JOINS each."""
    body = StudyCreate.model_validate({"name": "lone", "conditions": [{"name": "a"}]})
    made = await study.create(h.db, principal=h.principal, body=body)
    assert made.join_token is not None
    queued: list[float] = []
    direct: list[float] = []
    for _ in range(LONE_JOINS):
        queued.append((await timed(queue.join(made.join_token)))[1])
        direct.append((await timed(joining.join(h.db, token=made.join_token)))[1])
    return {"lone_queue_p50_ms": median(queued), "lone_direct_p50_ms": median(direct)}


class Dashboard:
    """The study's follower, and one family's own follower beside it (the baseline):
    when each entry was committed (a commit listener ahead of the bus's) and when
    each follower took it."""

    def __init__(self, h: Harness, study_id: str, family: str) -> None:
        self.committed: dict[int, float] = {}
        self.arrived: dict[int, float] = {}
        self.family_arrived: dict[int, float] = {}
        self.turns_seen = 0
        self.h, self.study_id, self.family = h, study_id, family
        self.tasks: list[asyncio.Task[None]] = []

    def _on_commit(self, entries: Sequence[LoggedAction]) -> None:
        at = time.perf_counter()
        for entry in entries:
            self.committed[entry.seq] = at

    async def start(self) -> None:
        self.h.db.commit_listeners.insert(0, self._on_commit)
        start = await study_events.open_stream(
            self.h.db, principal=self.h.principal, study_id=self.study_id, after=0
        )
        stream = study_events.follow(self.h.db, self.h.turns.bus, start, limit=None)
        self.tasks.append(asyncio.create_task(self._take(stream, self.arrived)))
        own = self.h.turns.bus.stream(root_thread_ids={self.family}, after=start.after, limit=None)
        self.tasks.append(asyncio.create_task(self._take(own, self.family_arrived)))
        await asyncio.sleep(0.2)

    async def _take(self, stream: Any, into: dict[int, float]) -> None:
        async for entry in stream:
            into[entry.seq] = time.perf_counter()
            if into is self.arrived and entry.action.get("type") == "chat/turnComplete":
                self.turns_seen += 1

    def lags(self, into: dict[int, float]) -> list[float]:
        """Milliseconds from commit to arrival, of the entries committed while measured."""
        return [
            (at - self.committed[seq]) * 1000 for seq, at in into.items() if seq in self.committed
        ]

    async def stop(self) -> None:
        self.h.db.commit_listeners.remove(self._on_commit)
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


async def participant_turns(h: Harness, principal: Principal, thread_id: str) -> int:
    completed = 0
    for k in range(1, TURNS + 1):
        content = STEPS[k % len(STEPS)].format(k=k)
        turn = await h.turns.start_turn(principal=principal, thread_id=thread_id, content=content)
        async for ev in turn.events():
            completed += ev.name == "turn_completed"
    return completed


async def streaming(h: Harness, study_id: str, joined: list[Any]) -> dict[str, Any]:
    """The joins were made before the dashboard opened: it replays them from the log,
    uncounted. Every entry committed while the participants stream is counted."""
    dash = Dashboard(h, study_id, joined[0].thread_id)
    await dash.start()
    principals = [await joining.authenticate(h.db, token=j.token) for j in joined]
    start = time.perf_counter()
    completed = await asyncio.gather(
        *(participant_turns(h, p, j.thread_id) for p, j in zip(principals, joined, strict=True))
    )
    seconds = time.perf_counter() - start
    await asyncio.sleep(1.0)
    await dash.stop()
    lags, own = dash.lags(dash.arrived), dash.lags(dash.family_arrived)
    return {
        "turns": sum(completed),
        "turns_expected": len(joined) * TURNS,
        "seen": dash.turns_seen,
        "actions": len(lags),
        "turns_per_s": sum(completed) / seconds,
        "lag_p50_ms": median(lags),
        "lag_p99_ms": percentile(lags, 99),
        "own_lag_p99_ms": percentile(own, 99),
    }


def count_statements(h: Harness) -> list[int]:
    counter = [0]

    def hit(*_: Any) -> None:
        counter[0] += 1

    event.listen(h.db.engine.sync_engine, "before_cursor_execute", hit)
    return counter


async def _csv(chunks: Any) -> tuple[float, float, int]:
    """Seconds to stream `chunks` to the end, the RSS growth meanwhile (MB), bytes."""
    base, peak, size = rss_mb(), 0.0, 0
    start = time.perf_counter()
    async for chunk in chunks:
        size += len(chunk)
        peak = max(peak, rss_mb())
    return time.perf_counter() - start, max(0.0, peak - base), size


async def reads(h: Harness, study_id: str, roots: list[str]) -> dict[str, Any]:
    """Each read and its baseline interleaved round by round (a load spike costs both),
    after a warm-up round; p50 over the rounds."""
    owner = h.principal
    calls = {
        "participants": lambda: reports.participants(h.db, principal=owner, study_id=study_id),
        "metrics": lambda: reports.study_metrics(h.db, principal=owner, study_id=study_id),
        "baseline": lambda: analysis_export.count_nodes(h.db, roots),
    }
    out: dict[str, Any] = {}
    times: dict[str, list[float]] = {name: [] for name in calls}
    counter = count_statements(h)
    for n in range(REPEAT + 2):
        for name, call in calls.items():
            before = counter[0]
            _, ms = await timed(call())
            if n >= 2:
                times[name].append(ms)
            out[f"{name}_queries"] = counter[0] - before
    for name, values in times.items():
        out[f"{name}_p50_ms"] = median(values)
        out[f"{name}_p95_ms"] = percentile(values, 95)
    rows = await reports.participants(h.db, principal=h.principal, study_id=study_id)
    out["table_turns"] = sum(r.turns for r in rows)
    families = await reports.export_families(h.db, principal=h.principal, study_id=study_id)
    csv: dict[str, list[tuple[float, float, int]]] = {"study": [], "baseline": []}
    for n in range(CSV_ROUNDS + 1):
        for name in csv:
            chunks = (
                reports.stream_csv(h.db, families)
                if name == "study"
                else analysis_export.stream_csv(h.db, roots)
            )
            measured = await _csv(chunks)
            if n >= 1:
                csv[name].append(measured)
    for name, runs in csv.items():
        out[f"csv_{name}_s"] = median([r[0] for r in runs])
        out[f"csv_{name}_rss_mb"] = max(r[1] for r in runs)
        out[f"csv_{name}_mb"] = runs[0][2] / 2**20
    return out


async def measure(backend: str) -> dict[str, Any]:
    async with temp_settings(backend) as settings, Harness.open(settings) as h:
        study_id, joined, row = await joins(h)
        if not ONLY_JOINS:
            row |= await streaming(h, study_id, joined)
            row |= await reads(h, study_id, [j.thread_id for j in joined])
    return {"backend": backend} | row


def checks_of(r: dict[str, Any]) -> dict[str, bool]:
    b = r["backend"]
    joined = {
        f"all_60_joined_{b}": r["families"] == PARTICIPANTS,
        f"groups_differ_by_le_1_{b}": r["spread"] <= 1,
        f"join_p99_le_200ms_{b}": r["join_p99_ms"] <= MAX_JOIN_P99_MS,
        f"lone_join_le_5ms_over_direct_{b}": r["lone_queue_p50_ms"]
        <= r["lone_direct_p50_ms"] + MAX_LONE_EXTRA_MS,
    }
    if ONLY_JOINS:
        return joined
    return joined | {
        f"every_turn_completed_{b}": r["turns"] == r["turns_expected"],
        f"dashboard_saw_every_turn_{b}": r["seen"] == r["turns_expected"],
        f"event_lag_p99_le_500ms_{b}": r["lag_p99_ms"] <= MAX_LAG_P99_MS,
        f"participants_le_200ms_{b}": r["participants_p50_ms"] <= MAX_READ_MS,
        f"metrics_le_200ms_{b}": r["metrics_p50_ms"] <= MAX_READ_MS,
        f"csv_le_3s_{b}": r["csv_study_s"] <= MAX_CSV_S,
        f"csv_rss_le_50mb_{b}": r["csv_study_rss_mb"] <= MAX_CSV_RSS_MB,
    }


def figures_of(r: dict[str, Any]) -> list[dict[str, Any]]:
    b, c = r["backend"], checks_of(r)
    joins = {
        "figure": f"{PARTICIPANTS} joins at once, {b}: p99 (groups {r['groups']})",
        "target": "<= 200 ms, all joined, groups differ by <= 1",
        "measured": f"{r['join_p99_ms']:.0f} ms (p50 {r['join_p50_ms']:.0f} ms), "
        f"{r['families']} families, spread {r['spread']}",
        "baseline": f"{r['plain_p99_ms']:.0f} ms p99, {PARTICIPANTS} plain families at once",
        "ok": c[f"join_p99_le_200ms_{b}"]
        and c[f"all_60_joined_{b}"]
        and c[f"groups_differ_by_le_1_{b}"],
    }
    lone = {
        "figure": f"one join at a time through the join queue, {b} (p50 of {LONE_JOINS})",
        "target": f"<= {MAX_LONE_EXTRA_MS:.0f} ms over the baseline",
        "measured": f"{r['lone_queue_p50_ms']:.1f} ms",
        "baseline": f"{r['lone_direct_p50_ms']:.1f} ms, the same join made directly "
        "(`joining.join`), interleaved",
        "ok": c[f"lone_join_le_5ms_over_direct_{b}"],
    }
    return [joins, lone] if ONLY_JOINS else [joins, lone, *_later_figures(r, c)]


def _later_figures(r: dict[str, Any], c: dict[str, bool]) -> list[dict[str, Any]]:
    b = r["backend"]
    n = f"{PARTICIPANTS} × {TURNS}"
    return [
        {
            "figure": f"{PARTICIPANTS} participants streaming {TURNS} turns each at once, {b}: "
            "dashboard event lag p99 (commit to arrival, every action)",
            "target": "<= 500 ms, every turn completes",
            "measured": f"{r['lag_p99_ms']:.0f} ms (p50 {r['lag_p50_ms']:.0f} ms); "
            f"{r['turns']}/{r['turns_expected']} turns, {r['seen']} seen, {r['actions']} actions, "
            f"{r['turns_per_s']:.0f} turns/s",
            "baseline": f"{r['own_lag_p99_ms']:.0f} ms p99, one family's own stream",
            "ok": c[f"event_lag_p99_le_500ms_{b}"]
            and c[f"every_turn_completed_{b}"]
            and c[f"dashboard_saw_every_turn_{b}"],
        },
        *(
            {
                "figure": f"study {what}, {n} study, {b} (service call, p50; SQL statements)",
                "target": "<= 200 ms",
                "measured": f"{r[f'{key}_p50_ms']:.0f} ms (p95 {r[f'{key}_p95_ms']:.0f} ms; "
                f"{r[f'{key}_queries']} statements)",
                "baseline": f"{r['baseline_p50_ms']:.0f} ms, count_nodes over the same "
                f"families ({r['baseline_queries']} statements)",
                "ok": c[f"{key}_le_200ms_{b}"],
            }
            for what, key in (
                ("participants table", "participants"),
                ("metrics", "metrics"),
            )
        ),
        {
            "figure": f"study CSV, {n} study, {b} (streamed to the end; RSS growth)",
            "target": "<= 3 s, <= 50 MB",
            "measured": f"{r['csv_study_s']:.2f} s, {r['csv_study_rss_mb']:.1f} MB "
            f"({r['csv_study_mb']:.1f} MB of CSV)",
            "baseline": f"{r['csv_baseline_s']:.2f} s, {r['csv_baseline_rss_mb']:.1f} MB, "
            "the analysis CSV of the same families",
            "ok": c[f"csv_le_3s_{b}"] and c[f"csv_rss_le_50mb_{b}"],
        },
    ]


async def run(backends: list[str]) -> int:
    rows = [await measure(b) for b in backends]
    print(f"\nA study of {PARTICIPANTS} participants × {TURNS} turns")
    columns = [
        ("database", "backend"),
        ("join p99 ms", "join_p99_ms"),
        ("plain p99 ms", "plain_p99_ms"),
        ("spread", "spread"),
        ("turns", "turns"),
        ("lag p99 ms", "lag_p99_ms"),
        ("own lag p99 ms", "own_lag_p99_ms"),
        ("table p50 ms", "participants_p50_ms"),
        ("metrics p50 ms", "metrics_p50_ms"),
        ("count_nodes ms", "baseline_p50_ms"),
        ("CSV s", "csv_study_s"),
        ("CSV RSS MB", "csv_study_rss_mb"),
    ]
    print_table(rows, columns[:4] if ONLY_JOINS else columns)
    checks: dict[str, bool] = {}
    figures: list[dict[str, Any]] = []
    for r in rows:
        checks |= checks_of(r)
        figures += figures_of(r)
    return report("studies", checks, rows=rows, figures=figures)


def main() -> None:
    sys.exit(asyncio.run(run(sys.argv[1:] or ["postgres", "sqlite"])))


if __name__ == "__main__":
    main()
