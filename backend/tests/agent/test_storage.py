"""The transcript store costs the same per turn however long the conversation is: each
turn's checkpoint holds that turn's messages only."""

from __future__ import annotations

import itertools
import statistics
import uuid

import psycopg
import pytest
from langchain_core.runnables import RunnableConfig

from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from tests.agent.conftest import Thread

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

TURNS = 60
WINDOW = 20

BYTES_SQL = """
SELECT
  (SELECT coalesce(sum(pg_column_size(x.*)), 0) FROM checkpoints x WHERE thread_id = %(t)s)
  + (SELECT coalesce(sum(pg_column_size(x.*)), 0) FROM checkpoint_blobs x WHERE thread_id = %(t)s)
  + (SELECT coalesce(sum(pg_column_size(x.*)), 0) FROM checkpoint_writes x WHERE thread_id = %(t)s)
  AS bytes,
  (SELECT count(*) FROM checkpoints WHERE thread_id = %(t)s) AS checkpoints
"""


async def _measure(settings: Settings, thread_id: str) -> tuple[int, int]:
    async with await psycopg.AsyncConnection.connect(settings.checkpoint_url) as conn:
        row = await (await conn.execute(BYTES_SQL, {"t": thread_id})).fetchone()
        assert row is not None
        return int(row[0]), int(row[1])


def _message(i: int) -> str:
    # ~1 KB that does not compress away (TOAST would hide a repetitive payload).
    return f"turn {i}: " + " ".join(uuid.uuid4().hex for _ in range(31))


async def test_each_turn_costs_the_same_storage(
    settings: Settings, runtime: AgentRuntime, thread: Thread
) -> None:
    sizes: list[int] = []
    counts: list[int] = []
    payload = 0
    for i in range(TURNS + 1):
        if i:
            text = _message(i)
            reply = await thread.turn(text)
            payload += len(text) + len(reply)
        size, count = await _measure(settings, thread.thread_id)
        sizes.append(size)
        counts.append(count)

    per_turn = [b - a for a, b in itertools.pairwise(sizes[1:])]  # turns 2..TURNS
    first = statistics.median(per_turn[:WINDOW])
    last = per_turn[-WINDOW:]
    print(
        f"\n[storage] {TURNS} turns: {sizes[-1]} bytes for a {payload}-byte payload; "
        f"median {first:.0f} B/turn over turns 2-{WINDOW + 1}, "
        f"{min(last)}-{max(last)} B/turn over turns {TURNS - WINDOW + 1}-{TURNS}; "
        f"{counts[-1]} checkpoints"
    )
    # Flat: every one of the last turns costs what the first ones did (a whole-list
    # rewrite per checkpoint would make it ~5x; periodic full copies, a spike).
    assert max(last) <= 1.1 * first
    assert statistics.mean(last) <= 1.05 * first
    # About the payload itself, not a multiple of it.
    assert sizes[-1] < 3 * payload
    # The newest checkpoint holds the last turn only (the state is turn-scoped).
    assert runtime.store is not None
    saver = runtime.store.for_thread(thread.thread_id)
    config: RunnableConfig = {"configurable": {"thread_id": thread.thread_id, "checkpoint_ns": ""}}
    latest = await saver.aget_tuple(config)
    assert latest is not None
    assert len(latest.checkpoint["channel_values"]["messages"]) == 2
    # One checkpoint per turn (durability="exit"), plus the thread's first, empty one.
    assert counts[TURNS] - counts[1] == TURNS - 1
    assert counts[TURNS] <= TURNS + 1
    # And the transcript reads back whole.
    messages = await runtime.messages(thread.thread_id)
    assert [m.turn_index for m in messages if m.role == "user"] == list(range(1, TURNS + 1))
