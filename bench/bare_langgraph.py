"""The floor for a streamed turn's CPU: a bare LangGraph graph, no HAICO around it.

`python -m bench.bare_langgraph --n N --base-url URL --pg URL [--client stock|lean]`
(run by `bench.concurrency`, in its own process, against the same fake model): one
graph of one node that streams the model's reply, a `ChatOpenAI` client (`stock`:
langchain-openai's own; `lean`: the subclass HAICO streams with) and LangGraph's
PostgreSQL checkpointer on a connection pool, as HAICO uses them. N turns run at
once, each on a thread of its own, read with LangGraph's usual `stream_mode="messages"`.
Prints one JSON line: the turns completed, the tokens read, and the process's CPU time
(user + system) per turn over the N turns.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import sys
import uuid
from typing import Any

from langchain_core.messages import AIMessageChunk, HumanMessage
from langchain_openai import ChatOpenAI
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from psycopg import AsyncConnection
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool
from pydantic import SecretStr


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def make_model(client: str, base_url: str) -> ChatOpenAI:
    kwargs: dict[str, Any] = {
        "model": "fake-paced",
        "base_url": base_url,
        "api_key": SecretStr("bench"),
        "streaming": True,
        "stream_usage": True,
    }
    if client == "lean":
        sys.path.insert(0, "backend")
        from haico.agent.openai_stream import LeanChatOpenAI

        return LeanChatOpenAI(**kwargs)
    return ChatOpenAI(**kwargs)


def build(model: ChatOpenAI, saver: AsyncPostgresSaver) -> Any:
    async def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [await model.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_edge(START, "agent")
    graph.add_edge("agent", END)
    return graph.compile(checkpointer=saver)


async def turn(graph: Any) -> int:
    """One turn on a new thread; the number of content chunks read."""
    config = {"configurable": {"thread_id": uuid.uuid4().hex}}
    tokens = 0
    async for chunk, _meta in graph.astream(
        {"messages": [HumanMessage("tell me a story")]}, config, stream_mode="messages"
    ):
        if isinstance(chunk, AIMessageChunk) and chunk.content:
            tokens += 1
    return tokens


async def run(n: int, base_url: str, pg: str, client: str) -> dict[str, Any]:
    async with await AsyncConnection.connect(pg, autocommit=True) as conn:
        await AsyncPostgresSaver(conn).setup()  # type: ignore[arg-type]
    pool: AsyncConnectionPool[Any] = AsyncConnectionPool(
        pg,
        min_size=1,
        max_size=6,
        kwargs={"autocommit": True, "prepare_threshold": 0, "row_factory": dict_row},
        open=False,
    )
    await pool.open()
    try:
        graph = build(make_model(client, base_url), AsyncPostgresSaver(pool))
        await turn(graph)  # warm-up, outside the measure
        cpu0 = cpu_seconds()
        tokens = await asyncio.gather(*(turn(graph) for _ in range(n)), return_exceptions=True)
        cpu = cpu_seconds() - cpu0
    finally:
        await pool.close()
    done = [t for t in tokens if isinstance(t, int)]
    return {
        "client": client,
        "conversations": n,
        "completed": len(done),
        "tokens_seen": sum(done),
        "cpu_ms_per_turn": cpu * 1000 / n,
        "errors": sorted({repr(t)[:200] for t in tokens if not isinstance(t, int)}),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, required=True)
    parser.add_argument("--base-url", required=True)
    parser.add_argument("--pg", required=True)
    parser.add_argument("--client", choices=("stock", "lean"), default="stock")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args.n, args.base_url, args.pg, args.client))))


if __name__ == "__main__":
    main()
