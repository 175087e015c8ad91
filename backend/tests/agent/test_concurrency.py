"""Turns of different conversations do not queue behind one checkpointer lock."""

from __future__ import annotations

import asyncio
import time

import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

from haico.agent.runtime import AgentRuntime
from tests.agent.conftest import Thread, new_thread

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)


async def _two_threads_on_different_shards(rt: AgentRuntime) -> tuple[Thread, Thread]:
    assert rt.store is not None
    first = await new_thread(rt)
    for _ in range(50):
        other = await new_thread(rt)
        if rt.store.shard(other.thread_id) != rt.store.shard(first.thread_id):
            return first, other
    raise AssertionError("every thread landed on one shard")


async def test_two_conversations_run_their_turns_concurrently(runtime: AgentRuntime) -> None:
    a, b = await _two_threads_on_different_shards(runtime)
    started = time.perf_counter()
    await a.turn("wait: 1")
    single = time.perf_counter() - started

    started = time.perf_counter()
    await asyncio.gather(a.turn("wait: 1"), b.turn("wait: 1"))
    both = time.perf_counter() - started
    print(f"\n[concurrency] one wait:1 turn {single:.2f}s, two threads at once {both:.2f}s")
    assert single >= 1.0
    assert both < 1.5 * single
    assert len(await runtime.messages(b.thread_id)) == 2


async def test_a_busy_saver_does_not_block_another_threads_turn(runtime: AgentRuntime) -> None:
    """Hold one shard's saver lock (as a long checkpoint call would): the other
    conversation's turn still completes, while one on the held shard waits."""
    assert runtime.store is not None
    a, b = await _two_threads_on_different_shards(runtime)
    saver = runtime.store.for_thread(a.thread_id)
    assert isinstance(saver, AsyncPostgresSaver)
    assert saver is not runtime.store.for_thread(b.thread_id)
    async with saver.lock:
        blocked = asyncio.create_task(a.turn("todo: waits for its shard"))
        reply = await asyncio.wait_for(b.turn("todo: runs meanwhile"), timeout=10)
        assert reply.startswith("Done.")
        assert not blocked.done()
    await asyncio.wait_for(blocked, timeout=10)
    assert [t.text for t in (await a.workspace()).todos] == ["waits for its shard"]
    assert [t.text for t in (await b.workspace()).todos] == ["runs meanwhile"]
