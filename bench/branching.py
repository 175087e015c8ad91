"""Branch-creation benchmark on PostgreSQL, against LangGraph's own cost of the copy.

Run from the repository root: `.venv/bin/python -m bench.branching`.

Three conversations of 6, 51 and 501 turns (offline model, ~1 KB user messages, a turn
without tool calls stores 2 messages) are branched at turn 5, 50 and 500, i.e. with
10, 100 and 1000 prior messages, by `services.branching.create_branch` (all three
phases: SQL rows, transcript seed, activation). Beside it, in the same run and with
the same checkpointer, the fastest way LangGraph itself offers to start a thread from
a past state (the Postgres saver has no `acopy_thread`, and that would copy the whole
thread, not a prefix): with LangGraph's default `MessagesState`, whose checkpoint at
turn k holds the whole transcript through k, it is one `aget_state` at that
checkpoint (time travel) and one `aupdate_state` of its messages into a fresh thread.
The baseline thread is built on the same saver with the same prefix messages: one
checkpoint holding the prefix, then the next turn on top, so the read is of an
interior checkpoint as in a real conversation. Median of RUNS runs each, interleaved.

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
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import START, MessagesState, StateGraph

from bench.common import Harness, median, print_table, random_text, report, temp_settings
from haico.agent.runtime import AgentRuntime
from haico.services.history.branching import create_branch
from haico.services.history.seeding import transcript_prefix

POINTS = (5, 50, 500)
RUNS = 7
WARMUP = 2
MESSAGE_CHARS = 1000
MAX_RATIO_AT_1000 = 1.5
MAX_MS_AT_10 = 20.0


def messages_graph(saver: BaseCheckpointSaver[Any]) -> Any:
    """LangGraph's default state, `MessagesState`, on our checkpointer (a no-op node:
    only its checkpoints are used)."""

    async def agent(state: MessagesState) -> dict[str, Any]:
        return {}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


async def baseline_thread(
    runtime: AgentRuntime, source: str, turn: int
) -> tuple[Any, RunnableConfig, int]:
    """A `MessagesState` thread holding the source's transcript: the checkpoint at the
    branch point (the prefix through `turn`) and the next turn after it."""
    assert runtime.store is not None
    messages = await runtime.raw_messages(source)
    prefix = transcript_prefix(messages, turn)
    after = transcript_prefix(messages, turn + 1)[len(prefix) :]
    thread_id = "th_" + uuid.uuid4().hex
    graph = messages_graph(runtime.store.for_thread(thread_id))
    config: RunnableConfig = {"configurable": {"thread_id": thread_id}}
    at_turn = await graph.aupdate_state(config, {"messages": prefix}, as_node="agent")
    await graph.aupdate_state(config, {"messages": after}, as_node="agent")
    return graph, at_turn, len(prefix)


async def raw_copy(graph: Any, at_turn: RunnableConfig) -> int:
    """LangGraph alone: the state at the branch point's checkpoint, written into a new
    thread."""
    state = await graph.aget_state(at_turn)
    prefix = list(state.values["messages"])
    target: RunnableConfig = {"configurable": {"thread_id": "th_" + uuid.uuid4().hex}}
    await graph.aupdate_state(target, {"messages": prefix}, as_node="agent")
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
            graph, at_turn, prefix_len = await baseline_thread(h.runtime, source, turns)
            for run_no in range(WARMUP + RUNS):
                start = time.perf_counter()
                await create_branch(
                    h.db, h.runtime, principal=h.principal, thread_id=source, from_turn=turns
                )
                ours_ms = (time.perf_counter() - start) * 1000
                start = time.perf_counter()
                copied = await raw_copy(graph, at_turn)
                raw_ms = (time.perf_counter() - start) * 1000
                if copied != prefix_len:
                    raise RuntimeError(f"the baseline copied {copied} of {prefix_len} messages")
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
    print(
        "create_branch vs LangGraph's MessagesState: aget_state at the branch point + "
        f"aupdate_state into a new thread (median of {RUNS})"
    )
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
    first, last = by_point[POINTS[0]], by_point[POINTS[-1]]
    raw_name = (
        "LangGraph MessagesState: aget_state at the branch point + aupdate_state into a new thread"
    )
    figures = [
        {
            "figure": f"branch creation at {first['prior_messages']} prior messages",
            "target": f"<= {MAX_MS_AT_10:.0f} ms",
            "measured": f"{first['ours_ms']:.1f} ms",
            "baseline": f"{first['raw_ms']:.1f} ms, {raw_name}",
            "ok": checks["ours_le_20ms_at_10_messages"],
        },
        {
            "figure": f"branch creation at {last['prior_messages']} prior messages, ours / raw",
            "target": f"<= {MAX_RATIO_AT_1000}x",
            "measured": f"{last['ratio']:.2f}x ({last['ours_ms']:.1f} ms)",
            "baseline": f"{last['raw_ms']:.1f} ms, {raw_name}",
            "ok": checks["ours_le_1.5x_raw_at_1000_messages"],
        },
    ]
    return report("branching", checks, runs=RUNS, results=rounded, figures=figures)


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
