"""Run every benchmark and write docs/performance.md: `.venv/bin/python -m bench`
(what `make bench` runs); `python -m bench reads checkout` runs only those;
`python -m bench --from-log LOG…` rewrites the report from saved runs.

Each benchmark runs in its own process (its own event loop and temporary database),
prints its table and one JSON line, and exits 1 when one of its targets fails. This
runner echoes their output, exits 1 when any of them did (after running them all),
and writes every figure (target, measured, the baseline measured in the same run)
to docs/performance.md. A partial run (named benchmarks) does not write the file.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

# Latency benchmarks first: the storage benchmark writes ~100 MB, and the database
# server is still flushing it for a while afterwards.
BENCHMARKS = (
    "graph_bench",
    "checkout",
    "merge",
    "reads",
    "search",
    "ledger",
    "coding",
    "replay",
    "branching",
    "turns",
    "sqlite_concurrency",
    "concurrency",
    "workers",
    "ahp",
    "studio",
    "studies",
    "storage",
)
ROOT = Path(__file__).resolve().parent.parent
REPORT = ROOT / "docs" / "performance.md"


LOADS: dict[str, tuple[float, float]] = {}
SPEEDS: dict[str, float] = {}
REFERENCE_LOOP = 1_000_000


def reference_ms() -> float:
    """Milliseconds this process takes for a fixed pure-Python loop (best of 3): how
    fast the machine runs Python at the moment. A shared VM's speed moves between
    runs, with or without load; an absolute target (a p50 in ms) means little in a
    run where this took twice as long as usual."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        sum(i * i for i in range(REFERENCE_LOOP))
        best = min(best, time.perf_counter() - start)
    return best * 1000


def run_one(name: str) -> tuple[int, float, dict[str, Any] | None]:
    SPEEDS[name] = reference_ms()
    print(f"speed: {SPEEDS[name]:.1f}", flush=True)
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", f"bench.{name}"],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    result: dict[str, Any] | None = None
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
        if line.startswith('{"bench"'):
            result = json.loads(line)
    code = proc.wait()
    LOADS[name] = (load_before, os.getloadavg()[0])
    print(f"load: {LOADS[name][0]:.2f} -> {LOADS[name][1]:.2f}", flush=True)
    return code, time.perf_counter() - start, result


def _ms(value: float) -> str:
    return f"{value:.1f} ms"


def legacy_figures(name: str, data: dict[str, Any]) -> list[dict[str, Any]]:
    """Figures of the benchmarks whose JSON predates the `figures` list."""
    checks = data.get("checks", {})
    if name == "graph":
        rows = {r["family_nodes"]: r for r in data["results"]}
        return [
            {
                "figure": "graph build, 5000-node family (500 returned) / 500-node family",
                "target": "<= 4x",
                "measured": f"{data['ratio_5000_500']:.2f}x "
                f"({_ms(rows[5000]['median_ms'])} vs {_ms(rows[500]['median_ms'])})",
                "baseline": "none: the 500-node build in the same run is the denominator",
                "ok": checks.get("time_5000_le_4x_500"),
            },
            {
                "figure": "graph build, SQL queries per build at 50 / 500 / 5000 nodes",
                "target": "constant",
                "measured": " / ".join(str(r["queries"]) for r in data["results"]),
                "baseline": "none",
                "ok": checks.get("queries_constant"),
            },
        ]
    if name == "branching":
        by = {r["prior_messages"]: r for r in data["results"]}
        first, last = min(by), max(by)
        return [
            {
                "figure": f"branch creation at {first} prior messages",
                "target": "<= 20 ms",
                "measured": _ms(by[first]["ours_ms"]),
                "baseline": f"{_ms(by[first]['raw_ms'])}, LangGraph read + rewrite of the prefix",
                "ok": checks.get("ours_le_20ms_at_10_messages"),
            },
            {
                "figure": f"branch creation at {last} prior messages, ours / raw",
                "target": "<= 1.5x",
                "measured": f"{by[last]['ratio']:.2f}x ({_ms(by[last]['ours_ms'])})",
                "baseline": f"{_ms(by[last]['raw_ms'])}, LangGraph read (alist) + rewrite "
                "of the prefix",
                "ok": checks.get("ours_le_1.5x_raw_at_1000_messages"),
            },
        ]
    if name == "turns":
        lat = data["latency"]
        figures = [
            {
                "figure": "time per turn, turns 391-400 / turns 1-10 (offline model, PostgreSQL)",
                "target": "<= 1.3x",
                "measured": f"{lat['ratio']:.2f}x ({_ms(lat['last_ms'])})"
                if "last_ms" in lat
                else f"{lat['ratio']:.2f}x",
                "baseline": "turns 1-10 of a fresh conversation, interleaved in the same run"
                + (f": {_ms(lat['fresh_first_ms'])}" if "fresh_first_ms" in lat else ""),
                "ok": checks.get("latency_turn400_le_1.3x_turn1"),
            }
        ]
        if over := data.get("overhead"):
            figures.append(
                {
                    "figure": "time per turn through the turn service / a bare LangGraph "
                    "invoke (same graph, checkpointer and offline model, PostgreSQL)",
                    "target": "<= 1.5x",
                    "measured": f"{over['ratio']:.2f}x ({_ms(over['ours_ms'])})",
                    "baseline": f"{_ms(over['bare_ms'])}, graph.ainvoke (durability exit), "
                    f"{over['pairs']} pairs interleaved",
                    "ok": checks.get("overhead_le_1.5x_bare_langgraph"),
                }
            )
            if "stream_ms" in over:
                figures.append(
                    {
                        "figure": "the same turns / a bare LangGraph astream that streams "
                        "the reply as the service does (updates, text to a callback)",
                        "target": "reported",
                        "measured": f"{over['ratio_stream']:.2f}x ({_ms(over['ours_ms'])})",
                        "baseline": f"{_ms(over['stream_ms'])}, graph.astream, interleaved "
                        "with the pairs above",
                        "ok": None,
                    }
                )
        for row in data.get("throughput", []):
            figures.append(
                {
                    "figure": f"throughput, 16 conversations at once vs one alone, "
                    f"{row['backend']} (one process)",
                    "target": "reported",
                    "measured": f"{row['ratio']:.2f}x ({row['together_turns_s']:.1f} turns/s)",
                    "baseline": f"one conversation alone: {row['alone_turns_s']:.1f} turns/s",
                    "ok": None,
                }
            )
        return figures
    if name == "storage":
        last = data["results"][-1]
        return [
            {
                "figure": f"transcript size / payload at {last['turns']} turns",
                "target": "<= 3x",
                "measured": f"{last['transcript_ratio']:.2f}x",
                "baseline": f"{last.get('baseline_ratio', float('nan')):.1f}x, LangGraph's "
                "default MessagesState with the same messages",
                "ok": checks.get("transcript_le_3x_payload"),
            },
            {
                "figure": f"workspace size / distinct document versions at {last['turns']} turns",
                "target": "<= 1.5x",
                "measured": f"{last['workspace_ratio']:.2f}x",
                "baseline": "none",
                "ok": checks.get("workspace_le_1.5x_versions"),
            },
            {
                "figure": "growth of those ratios from 50 to 400 turns",
                "target": "<= 1.1x",
                "measured": f"transcript {data['transcript_growth']:.3f}x, "
                f"workspace {data['workspace_growth']:.3f}x",
                "baseline": "none",
                "ok": checks.get("transcript_ratio_400_le_1.1x_50")
                and checks.get("workspace_ratio_400_le_1.1x_50"),
            },
        ]
    return [
        {"figure": check, "target": "pass", "measured": "pass" if ok else "fail", "baseline": "-"}
        | {"ok": ok}
        for check, ok in checks.items()
    ]


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|")


def write_report(
    results: list[tuple[str, int, float, dict[str, Any] | None]], logs: int = 0
) -> None:
    lines = [
        "# Performance",
        "",
        "Written by `make bench` (`python -m bench`); do not edit by hand. Every figure",
        "with its target, the value measured in this run, and the baseline measured in",
        'the same run ("none" where the benchmark has no baseline of its own).',
        "",
        f"- run: {datetime.now(UTC).strftime('%Y-%m-%d %H:%M UTC')}"
        + (
            f", assembled from {logs} saved runs of `make bench` / `python -m bench NAME…` "
            "(`--from-log`; a benchmark re-run later replaces its earlier figures; each "
            "benchmark's load is its own)"
            if logs
            else ""
        ),
        f"- machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; PostgreSQL at "
        f"`{os.environ.get('HAICO_BENCH_PG_ADMIN_URL', 'postgresql://postgres@127.0.0.1:5432')}`",
        "- timings move by about ±20% from run to run on a quiet machine, and scale with",
        "  load: the 1-minute load average before and after each benchmark is listed at the",
        f"  end ({os.cpu_count()} cores; a load above that means other work shared the CPUs)",
        "- the machine's speed moves too, load or not (a shared VM): before each benchmark",
        f"  the end table gives the time of a fixed pure-Python loop ({REFERENCE_LOOP:,}",
        "  squares summed, best of 3); compare runs by it before comparing their figures",
        "",
        "| benchmark | figure | target | measured | baseline (same run) | met |",
        "|---|---|---|---|---|---|",
    ]
    for name, code, seconds, data in results:
        if data is None:
            lines.append(f"| {name} | (no result: exit {code} after {seconds:.0f} s) | | | | ✗ |")
            continue
        bench = data.get("bench", name)
        figures = data.get("figures") or legacy_figures(bench, data)
        for fig in figures:
            ok = fig.get("ok")
            met = "—" if ok is None else ("✓" if ok else "✗ missed")
            lines.append(
                f"| {bench} | {_cell(fig['figure'])} | {_cell(fig['target'])} | "
                f"{_cell(fig['measured'])} | {_cell(fig['baseline'])} | {met} |"
            )
    lines += [
        "",
        "| benchmark | run time | load before → after | reference loop before |",
        "|---|---|---|---|",
        *(
            f"| {n} | {s:.0f} s | "
            + (f"{LOADS[n][0]:.1f} → {LOADS[n][1]:.1f}" if n in LOADS else "not recorded")
            + " | "
            + (f"{SPEEDS[n]:.0f} ms" if n in SPEEDS else "not recorded")
            + " |"
            for n, _, s, _ in results
        ),
        "",
    ]
    REPORT.write_text("\n".join(lines))
    print(f"\nwrote {REPORT.relative_to(ROOT)}")


def from_logs(paths: list[str]) -> list[tuple[str, int, float, dict[str, Any] | None]]:
    """The results of earlier runs, from their saved output (`make bench | tee LOG`);
    a benchmark found in a later log replaces the same one from an earlier log. Used to
    rewrite the report after re-running some benchmarks: `python -m bench --from-log
    full.log concurrency.log`."""
    found: dict[str, tuple[str, int, float, dict[str, Any] | None]] = {}
    for path in paths:
        name = ""
        for line in Path(path).read_text().splitlines():
            if line.startswith("=== bench.") and line.endswith(" ==="):
                name = line[len("=== bench.") : -len(" ===")]
            elif line.startswith('{"bench"') and name:
                data = json.loads(line)
                found[name] = (name, 0 if data.get("ok") else 1, 0.0, data)
            elif line.startswith("speed: ") and name:
                SPEEDS[name] = float(line[len("speed: ") :])
            elif line.startswith("load: ") and name:
                before, after = line[6:].split(" -> ")
                LOADS[name] = (float(before), float(after))
            elif line.strip().startswith(("PASS  bench.", "FAIL  bench.")) and "(" in line:
                bench = line.split()[1][len("bench.") :]
                seconds = float(line.rsplit("(", 1)[1].split()[0])
                if bench in found:
                    n, code, _, data = found[bench]
                    found[bench] = (n, code, seconds, data)
    return [found[n] for n in BENCHMARKS if n in found]


def main() -> None:
    if sys.argv[1:2] == ["--from-log"]:
        write_report(from_logs(sys.argv[2:]), logs=len(sys.argv[2:]))
        return
    names = sys.argv[1:] or list(BENCHMARKS)
    results = []
    for name in names:
        print(f"\n=== bench.{name} ===", flush=True)
        code, seconds, data = run_one(name)
        results.append((name, code, seconds, data))
    print("\n=== summary ===")
    for name, code, seconds, _ in results:
        print(f"  {'PASS' if code == 0 else 'FAIL'}  bench.{name}  ({seconds:.0f} s)")
    if not sys.argv[1:]:
        write_report(results)
    sys.exit(1 if any(code for _, code, _, _ in results) else 0)


if __name__ == "__main__":
    main()
