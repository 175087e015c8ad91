"""Storage benchmark on PostgreSQL: bytes per byte of payload at 50, 200 and 400 turns.

Run from the repository root: `.venv/bin/python -m bench.storage`.

One conversation runs 400 turns through the turn service (offline model) with ~1 KB
user messages that do not compress; before every 10th turn (1, 11, 21, ...) the user
edits a 20 KB document through the workspace service (a 2 KB slice changes), so the
next snapshot captures a new document version. At 50, 200 and 400 turns it measures,
as the sum of `pg_column_size` over the rows (what the data costs as stored), with
`pg_total_relation_size` beside:

- transcript: checkpoints + checkpoint_blobs + checkpoint_writes of the thread, against
  the payload = the characters of every message content read back from the transcript;
- workspace: workspace_snapshots of the thread + document_bodies, against the payload
  = the size of the distinct document versions.

Baseline, same run, its own database and thread: LangGraph's default `MessagesState`
in a one-node graph with the same messages (the same user texts and the replies our
run produced) and the same durability ("exit").

Targets: transcript <= 3x payload; workspace <= 1.5x payload; each ratio at 400 turns
at most 10% above its ratio at 50. Exits 1 when one fails.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import START, MessagesState, StateGraph
from psycopg import AsyncConnection
from psycopg.rows import DictRow, dict_row
from sqlalchemy import text

from bench.common import Harness, print_table, random_text, report, temp_settings
from haico.agent.runtime import DURABILITY, message_text
from haico.config import Settings
from haico.services.workspace import edits as workspace

POINTS = (50, 200, 400)
MESSAGE_CHARS = 1000
DOCUMENT_CHARS = 20_000
EDIT_CHARS = 2_000
EDIT_EVERY = 10
MAX_TRANSCRIPT_RATIO = 3.0
MAX_WORKSPACE_RATIO = 1.5
MAX_GROWTH = 1.10

CHECKPOINT_TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")
WORKSPACE_TABLES = ("workspace_snapshots", "document_bodies")


def _sum_sql(table: str, where: str) -> str:
    return f"(SELECT coalesce(sum(pg_column_size(x.*)), 0) FROM {table} x {where})"


async def checkpoint_bytes(conn: AsyncConnection[DictRow], thread_id: str) -> tuple[int, int, int]:
    """(sum of pg_column_size over the thread's checkpoint rows, pg_total_relation_size,
    the part in checkpoint_blobs: the turn records)."""
    parts = ", ".join(f"{_sum_sql(t, 'WHERE thread_id = %(t)s')} AS {t}" for t in CHECKPOINT_TABLES)
    rels = " + ".join(f"pg_total_relation_size('{t}')" for t in CHECKPOINT_TABLES)
    row = await (await conn.execute(f"SELECT {parts}, {rels} AS rel", {"t": thread_id})).fetchone()
    assert row is not None
    total = sum(int(row[t]) for t in CHECKPOINT_TABLES)
    return total, int(row["rel"]), int(row["checkpoint_blobs"])


async def workspace_bytes(h: Harness, thread_id: str) -> tuple[int, int]:
    rows = (
        _sum_sql("workspace_snapshots", "WHERE thread_id = :t")
        + " + "
        + _sum_sql("document_bodies", "")
    )
    rels = " + ".join(f"pg_total_relation_size('{t}')" for t in WORKSPACE_TABLES)
    async with h.db.read() as s:
        row = (await s.execute(text(f"SELECT {rows}, {rels}"), {"t": thread_id})).one()
    return int(row[0]), int(row[1])


def content_chars(messages: list[BaseMessage]) -> int:
    return sum(len(message_text(m)) for m in messages)


def edited(body: str, version: int) -> str:
    """`body` with one 2 KB slice replaced (where depends on the version)."""
    slots = DOCUMENT_CHARS // EDIT_CHARS
    at = (version % slots) * EDIT_CHARS
    return body[:at] + random_text(EDIT_CHARS, f"v{version}")[:EDIT_CHARS] + body[at + EDIT_CHARS :]


async def run_ours(settings: Settings) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    """The HAICO run; also returns the (user text, reply) pairs for the baseline."""
    rows: list[dict[str, Any]] = []
    exchanged: list[tuple[str, str]] = []
    async with (
        Harness.open(settings) as h,
        await AsyncConnection[DictRow].connect(
            settings.checkpoint_url, autocommit=True, row_factory=dict_row
        ) as conn,
    ):
        thread_id = await h.new_conversation("storage bench")
        body = random_text(DOCUMENT_CHARS, "doc")
        versions: set[str] = set()
        started = time.perf_counter()
        for turn in range(1, POINTS[-1] + 1):
            if turn % EDIT_EVERY == 1:
                body = edited(body, turn // EDIT_EVERY)
                versions.add(body)
                await workspace.put_document(
                    h.db, principal=h.principal, thread_id=thread_id, content=body, title="bench"
                )
            message = random_text(MESSAGE_CHARS, f"turn {turn}:")
            reply, _ = await h.send(thread_id, message)
            exchanged.append((message, reply))
            if turn in POINTS:
                messages = await h.runtime.raw_messages(thread_id)
                t_rows, t_rel, t_blobs = await checkpoint_bytes(conn, thread_id)
                w_rows, w_rel = await workspace_bytes(h, thread_id)
                payload = content_chars(messages)
                doc_payload = sum(len(v.encode()) for v in versions)
                rows.append(
                    {
                        "turns": turn,
                        "messages": len(messages),
                        "payload": payload,
                        "transcript_bytes": t_rows,
                        "transcript_rel": t_rel,
                        "transcript_blobs": t_blobs,
                        "transcript_ratio": t_rows / payload,
                        "doc_versions": len(versions),
                        "doc_payload": doc_payload,
                        "workspace_bytes": w_rows,
                        "workspace_rel": w_rel,
                        "workspace_ratio": w_rows / doc_payload,
                        "elapsed_s": time.perf_counter() - started,
                    }
                )
    return rows, exchanged


def baseline_graph(saver: AsyncPostgresSaver) -> Any:
    """LangGraph's default: `MessagesState`, one node answering with a given reply."""

    async def agent(state: MessagesState, config: RunnableConfig) -> dict[str, Any]:
        return {"messages": [AIMessage(content=config["configurable"]["reply"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_edge(START, "agent")
    return builder.compile(checkpointer=saver)


async def run_baseline(
    settings: Settings, exchanged: list[tuple[str, str]]
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    async with await AsyncConnection[DictRow].connect(
        settings.checkpoint_url, autocommit=True, prepare_threshold=0, row_factory=dict_row
    ) as conn:
        saver = AsyncPostgresSaver(conn)
        await saver.setup()
        graph = baseline_graph(saver)
        thread_id = "baseline"
        started = time.perf_counter()
        for turn, (message, reply) in enumerate(exchanged, start=1):
            config: RunnableConfig = {"configurable": {"thread_id": thread_id, "reply": reply}}
            await graph.ainvoke(
                {"messages": [HumanMessage(content=message)]}, config, durability=DURABILITY
            )
            if turn in POINTS:
                state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
                messages = list(state.values.get("messages") or [])
                payload = content_chars(messages)
                t_rows, t_rel, _ = await checkpoint_bytes(conn, thread_id)
                rows.append(
                    {
                        "turns": turn,
                        "payload": payload,
                        "baseline_bytes": t_rows,
                        "baseline_rel": t_rel,
                        "baseline_ratio": t_rows / payload,
                        "baseline_elapsed_s": time.perf_counter() - started,
                    }
                )
    return rows


async def run() -> int:
    async with temp_settings() as settings:
        ours, exchanged = await run_ours(settings)
    async with temp_settings() as settings:
        baseline = await run_baseline(settings, exchanged)
    rows = [
        {**o, **{k: v for k, v in b.items() if k != "payload"}}
        for o, b in zip(ours, baseline, strict=True)
    ]
    for r in rows:
        r["baseline_over_ours"] = r["baseline_bytes"] / r["transcript_bytes"]

    print("Transcript (checkpoint tables; B = sum of pg_column_size, rel = pg_total_relation_size)")
    print_table(
        rows,
        [
            ("turns", "turns"),
            ("messages", "messages"),
            ("payload B", "payload"),
            ("ours B", "transcript_bytes"),
            ("ours rel B", "transcript_rel"),
            ("of it blobs B", "transcript_blobs"),
            ("ours x", "transcript_ratio"),
            ("MessagesState B", "baseline_bytes"),
            ("MS rel B", "baseline_rel"),
            ("MS x", "baseline_ratio"),
            ("MS/ours", "baseline_over_ours"),
        ],
    )
    print()
    print("Workspace (workspace_snapshots + document_bodies)")
    print_table(
        rows,
        [
            ("turns", "turns"),
            ("doc versions", "doc_versions"),
            ("versions B", "doc_payload"),
            ("ours B", "workspace_bytes"),
            ("ours rel B", "workspace_rel"),
            ("ours x", "workspace_ratio"),
        ],
    )
    print(
        f"elapsed: ours {rows[-1]['elapsed_s']:.1f} s for {POINTS[-1]} turns, "
        f"MessagesState baseline {rows[-1]['baseline_elapsed_s']:.1f} s"
    )
    first, last = rows[0], rows[-1]
    t_growth = last["transcript_ratio"] / first["transcript_ratio"]
    w_growth = last["workspace_ratio"] / first["workspace_ratio"]
    print(
        f"ratio growth {POINTS[-1]}/{POINTS[0]} turns: transcript {t_growth:.3f}, "
        f"workspace {w_growth:.3f} (limit {MAX_GROWTH})"
    )
    print(
        f"note: checkpoint_blobs ({last['transcript_blobs']:,} B at {last['turns']} turns) hold "
        "one turn record per checkpoint, that turn's messages only (haico/agent/state.py); "
        "the rest is the per-turn checkpoint row."
    )
    checks = {
        f"transcript_le_{MAX_TRANSCRIPT_RATIO:g}x_payload": all(
            r["transcript_ratio"] <= MAX_TRANSCRIPT_RATIO for r in rows
        ),
        f"workspace_le_{MAX_WORKSPACE_RATIO:g}x_versions": all(
            r["workspace_ratio"] <= MAX_WORKSPACE_RATIO for r in rows
        ),
        "transcript_ratio_400_le_1.1x_50": t_growth <= MAX_GROWTH,
        "workspace_ratio_400_le_1.1x_50": w_growth <= MAX_GROWTH,
    }
    for r in rows:
        for key, value in r.items():
            if isinstance(value, float):
                r[key] = round(value, 3)
    return report(
        "storage",
        checks,
        results=rows,
        transcript_growth=round(t_growth, 3),
        workspace_growth=round(w_growth, 3),
    )


def main() -> None:
    argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None).parse_args()
    sys.exit(asyncio.run(run()))


if __name__ == "__main__":
    main()
