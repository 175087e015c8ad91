"""Branch-creation benchmark on PostgreSQL, against LangGraph's own cost of the copy.

Run from the repository root: `.venv/bin/python -m bench.branching`.

Three conversations of 6, 51 and 501 turns (offline model, ~1 KB user messages, a turn
without tool calls stores 2 messages) are branched at turn 5, 50 and 500, i.e. with
10, 100 and 1000 prior messages, by `services.branching.create_branch` (all three
phases: SQL rows, transcript seed, activation). Beside it, in the same run and with
the same checkpointer, the raw LangGraph cost of that copy: reading the source's
transcript (its checkpoints' turn records, `saver.alist` joined by message id: the
state is turn-scoped, so `aget_state` holds only the last turn), the prefix cut, and
`aupdate_state` of the prefix into a fresh thread. Median of RUNS runs each,
interleaved.

Targets: ours <= 1.5x the raw cost at 1000 messages, and <= 20 ms at 10 messages.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
import uuid
from typing import Any

from langchain_core.runnables import RunnableConfig

from app.agent.runtime import AgentRuntime
from app.agent.state import join_records
from app.services.branching import create_branch, transcript_prefix
from bench.common import Harness, median, print_table, random_text, report, temp_settings

POINTS = (5, 50, 500)
RUNS = 7
WARMUP = 2
MESSAGE_CHARS = 1000
MAX_RATIO_AT_1000 = 1.5
MAX_MS_AT_10 = 20.0


async def raw_copy(runtime: AgentRuntime, source: str, turn: int) -> int:
    """LangGraph alone: read the source's turn records, cut the prefix, write it to a new
    thread."""
    assert runtime.store is not None
    saver = runtime.store.for_thread(source)
    source_config: RunnableConfig = {"configurable": {"thread_id": source, "checkpoint_ns": ""}}
    records = [
        list(t.checkpoint["channel_values"].get("messages") or [])
        async for t in saver.alist(source_config)
    ]
    prefix = transcript_prefix(join_records(reversed(records)), turn)
    target = "th_" + uuid.uuid4().hex
    config: RunnableConfig = {"configurable": {"thread_id": target}}
    await runtime.graph_for(target).aupdate_state(config, {"messages": prefix}, as_node="agent")
    return len(prefix)


async def run() -> int:
    rows: list[dict[str, Any]] = []
    async with temp_settings() as settings, Harness.open(settings) as h:
        sources: dict[int, str] = {}
        for turns in POINTS:
            thread_id = await h.new_conversation(f"source {turns}")
            for i in range(1, turns + 2):
                await h.send(thread_id, random_text(MESSAGE_CHARS, f"turn {i}:"))
            sources[turns] = thread_id
        for turns, source in sources.items():
            ours: list[float] = []
            raw: list[float] = []
            prefix_len = 0
            for run_no in range(WARMUP + RUNS):
                start = time.perf_counter()
                await create_branch(
                    h.db, h.runtime, user_id=h.user_id, thread_id=source, from_turn=turns
                )
                ours_ms = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                prefix_len = await raw_copy(h.runtime, source, turns)
                raw_ms = (time.perf_counter() - start) * 1000
                if run_no >= WARMUP:
                    ours.append(ours_ms)
                    raw.append(raw_ms)
            rows.append(
                {
                    "branch_point": turns,
                    "prior_messages": prefix_len,
                    "ours_ms": median(ours),
                    "raw_ms": median(raw),
                    "ratio": median(ours) / median(raw),
                    "ours_min_ms": min(ours),
                    "raw_min_ms": min(raw),
                }
            )
    print(f"create_branch vs LangGraph read + rewrite of the prefix (median of {RUNS})")
    print_table(
        rows,
        [
            ("branch at turn", "branch_point"),
            ("prior messages", "prior_messages"),
            ("ours ms", "ours_ms"),
            ("raw LangGraph ms", "raw_ms"),
            ("ours / raw", "ratio"),
            ("ours min ms", "ours_min_ms"),
            ("raw min ms", "raw_min_ms"),
        ],
    )
    by_point = {r["branch_point"]: r for r in rows}
    checks = {
        "ours_le_1.5x_raw_at_1000_messages": by_point[POINTS[-1]]["ratio"] <= MAX_RATIO_AT_1000,
        "ours_le_20ms_at_10_messages": by_point[POINTS[0]]["ours_ms"] <= MAX_MS_AT_10,
    }
    rounded = [{k: round(v, 3) if isinstance(v, float) else v for k, v in r.items()} for r in rows]
    return report("branching", checks, runs=RUNS, results=rounded)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
