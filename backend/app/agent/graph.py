"""The agent graph: `agent` (the model, prompt rebuilt from the live workspace) and
`tools` (workspace edits), looping until the model stops calling tools.

The state holds only the current turn (see `state.py`); the `agent` node reads the
last `CONTEXT_TURNS` turns from the thread's newest checkpoints, so what a model call
costs does not grow with the length of the conversation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from app.agent.checkpointer import turn_records
from app.agent.prompts import load_system_prompt
from app.agent.state import (
    CONTEXT_CHECKPOINTS,
    CONTEXT_TURNS,
    AgentState,
    join_records,
    last_turns,
)
from app.agent.tools import TOOLS, TOOLS_BY_NAME, run_context

# additional_kwargs keys HAICO adds to stored messages; never sent to a provider.
META_PREFIX = "haico_"

AgentGraph = CompiledStateGraph[AgentState, None, AgentState, AgentState]


def model_view(messages: Sequence[AnyMessage]) -> list[BaseMessage]:
    """The transcript as a provider accepts it.

    Drops HAICO's own message annotations, tool calls whose results were never
    recorded (a failed or cancelled turn), tool results without their call, and
    assistant messages left empty by a turn that was interrupted before any text.
    """
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    called: set[str] = set()
    out: list[BaseMessage] = []
    for m in messages:
        if isinstance(m, ToolMessage):
            if m.tool_call_id in called:
                out.append(m)
            continue
        extra = {k: v for k, v in m.additional_kwargs.items() if not k.startswith(META_PREFIX)}
        update: dict[str, Any] = {}
        if extra != m.additional_kwargs:
            update["additional_kwargs"] = extra
        if isinstance(m, AIMessage):
            calls = [c for c in m.tool_calls if c["id"] in answered]
            if len(calls) != len(m.tool_calls):
                update["tool_calls"] = calls
                update["invalid_tool_calls"] = []
            if not calls and not m.content:
                continue
            called.update(str(c["id"]) for c in calls)
        out.append(m.model_copy(update=update) if update else m)
    return out


async def recent_turns(
    checkpointer: BaseCheckpointSaver[Any] | None, thread_id: str, turns: int = CONTEXT_TURNS
) -> list[AnyMessage]:
    """The last `turns` turns recorded on the thread, from its newest checkpoints (a
    bounded read: one small turn record per checkpoint)."""
    if checkpointer is None or turns <= 0:
        return []
    records = await turn_records(checkpointer, thread_id, limit=CONTEXT_CHECKPOINTS)
    return last_turns(join_records(records), turns)


def build_graph(model: BaseChatModel, checkpointer: BaseCheckpointSaver[Any] | None) -> AgentGraph:
    bound = model.bind_tools(TOOLS)

    async def agent(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        workspace, thread_id = run_context(config)
        prompt = await load_system_prompt(workspace, thread_id)
        # This run's checkpoint is written when it ends (durability "exit"), so the
        # checkpoints hold the earlier turns; joining by id keeps that true otherwise.
        earlier = await recent_turns(checkpointer, thread_id)
        context = join_records([earlier, state["messages"]])
        response = await bound.ainvoke(
            [SystemMessage(content=prompt), *model_view(context)], config
        )
        return {"messages": [response]}

    async def tools(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        last = state["messages"][-1]
        calls = last.tool_calls if isinstance(last, AIMessage) else []
        results: list[ToolMessage] = []
        # In order, one at a time: each edit sees the one before (e.g. `todo:` then
        # `subtodo:`), and positions mean what the model saw.
        for call in calls:
            tool = TOOLS_BY_NAME.get(call["name"])
            error = f"Error: there is no tool named {call['name']!r}."
            if tool is not None:
                try:
                    result = await tool.ainvoke({**call, "type": "tool_call"}, config)
                except Exception as exc:  # bad arguments from the model
                    error = f"Error: {call['name']} failed: {exc}"
                else:
                    if isinstance(result, ToolMessage):
                        results.append(result)
                        continue
                    error = f"Error: {call['name']} returned no result."
            results.append(
                ToolMessage(
                    content=error,
                    tool_call_id=str(call["id"]),
                    name=call["name"],
                    status="error",
                    artifact={"surfaces": []},
                )
            )
        return {"messages": results}

    def route(state: AgentState) -> Literal["tools", "__end__"]:
        last = state["messages"][-1] if state["messages"] else None
        if isinstance(last, AIMessage) and last.tool_calls:
            return "tools"
        return "__end__"

    builder = StateGraph(AgentState)
    builder.add_node("agent", agent)
    builder.add_node("tools", tools)
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route, ["tools", END])
    builder.add_edge("tools", "agent")
    return builder.compile(checkpointer=checkpointer, name="haico-agent")
