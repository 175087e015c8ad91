"""The agent graph: `agent` (the model, prompt rebuilt from the live workspace) and
`tools` (workspace edits), looping until the model stops calling tools.

The state holds only the current turn (see `state.py`); the `agent` node reads the
recent turns from the thread's newest checkpoints and shows the model a bounded window
of them (`context_window`: at most `HAICO_CONTEXT_TURNS` earlier turns and
`HAICO_CONTEXT_TOKENS` estimated tokens), so what a model call costs does not grow
with the length of the conversation. When earlier turns are left out the system
prompt says how many, and that the workspace is the long-term memory."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    message_chunk_to_message,
)
from langchain_core.runnables import Runnable, RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.state import CompiledStateGraph

from haico.agent.checkpointer import turn_records
from haico.agent.meter import METER, Meter
from haico.agent.port import WorkspacePort, merge_notes
from haico.agent.profiles import RUN_PROFILE, BoundProfile, instructions_section
from haico.agent.prompts import load_system_prompt
from haico.agent.state import (
    CONTEXT_TOKENS,
    CONTEXT_TURNS,
    AgentState,
    ContextWindow,
    context_checkpoints,
    context_window,
    join_records,
)
from haico.agent.tools import TOOLS, TOOLS_BY_NAME, run_context
from haico.config import Settings

# additional_kwargs keys HAICO adds to stored messages; never sent to a provider.
META_PREFIX = "haico_"
# The key under which a stored HumanMessage carries its turn number.
TURN_INDEX_KEY = f"{META_PREFIX}turn_index"

# The configurable key under which a run may pass `OnText`: the agent's reply text is
# then streamed to it chunk by chunk as the model produces it.
ON_TEXT = "on_text"
OnText = Callable[[str], Awaitable[None]]
# In `configurable`: an `EarlierRecords` kept for one run (see there).
EARLIER = "haico_earlier"


class EarlierRecords:
    """The thread's transcript before this run, read by the run's first model call and
    reused by the later ones (after each round of tool calls): the checkpoints of
    earlier turns do not change while a turn runs, and this run's own messages come
    from the graph's state. Saves a read of the checkpointer per tool round.

    `early` is that read started before the run (while the turn was being opened, see
    `AgentRuntime.read_earlier`), for a run whose earlier turns end with turn
    `after_turn`. It was made before this process knew the turn would open, so it is
    used only if its newest turn is `after_turn` (a turn that closed meanwhile would be
    missing from it; a newer one is not ours); otherwise the first call reads again."""

    def __init__(
        self, early: asyncio.Future[list[AnyMessage]] | None = None, after_turn: int = 0
    ) -> None:
        self.records: list[AnyMessage] | None = None
        self.early = early
        self.after_turn = after_turn
        # The merges made since the transcript's last turn (`merged_since`), once read.
        self.merged: tuple[str, ...] | None = None

    async def take_early(self) -> list[AnyMessage] | None:
        """The early read if it is this run's (see the class doc), else None."""
        early, self.early = self.early, None
        if early is None:
            return None
        try:
            records = await early
        except Exception:
            return None  # read again, and fail there if the store is down
        turns = [
            t
            for m in records
            if isinstance(m, HumanMessage)
            and isinstance(t := m.additional_kwargs.get(TURN_INDEX_KEY), int)
        ]
        return records if max(turns, default=0) == self.after_turn else None


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


async def recent_records(
    checkpointer: BaseCheckpointSaver[Any] | None, thread_id: str, turns: int
) -> list[AnyMessage]:
    """The thread's newest turn records, joined: enough for its last `turns` turns (a
    bounded read: one small turn record per checkpoint)."""
    if checkpointer is None or turns <= 0:
        return []
    records = await turn_records(checkpointer, thread_id, limit=context_checkpoints(turns))
    return join_records(records)


async def model_window(
    checkpointer: BaseCheckpointSaver[Any] | None,
    thread_id: str,
    current: Sequence[AnyMessage],
    *,
    turns: int,
    tokens: int,
    memo: EarlierRecords | None = None,
) -> ContextWindow:
    """The window of the transcript the model sees while `current` (this turn's
    messages) runs: see `context_window`. With `memo`, the earlier turns are read
    once per run."""
    # This run's checkpoint is written when it ends (durability "exit"), so the
    # checkpoints hold the earlier turns; joining by id keeps that true otherwise.
    if memo is not None and memo.records is None:
        memo.records = await memo.take_early()
    if memo is not None and memo.records is not None:
        earlier = memo.records
    else:
        earlier = await recent_records(checkpointer, thread_id, turns)
        if memo is not None:
            memo.records = earlier
    return context_window(
        join_records([earlier, current]),
        max_turns=turns,
        max_tokens=tokens,
        turn_index_key=TURN_INDEX_KEY,
    )


def _turns_of(messages: Sequence[AnyMessage]) -> list[int]:
    return [
        t
        for m in messages
        if isinstance(m, HumanMessage)
        and isinstance(t := m.additional_kwargs.get(TURN_INDEX_KEY), int)
    ]


async def merged_since(
    workspace: WorkspacePort,
    thread_id: str,
    current: Sequence[AnyMessage],
    memo: EarlierRecords | None,
) -> tuple[str, ...]:
    """The merges made on this thread's path since the transcript's last turn: a merge
    node has no transcript, so the turns between the last recorded one and this run's
    are looked up (only when there are any), once per run."""
    if memo is None or memo.records is None:
        return ()
    if memo.merged is None:
        running = _turns_of(current)
        earlier = _turns_of(memo.records)
        memo.merged = (
            await merge_notes(
                workspace,
                thread_id,
                after_turn=max(earlier, default=0),
                before_turn=running[0],
            )
            if running
            else ()
        )
    return memo.merged


async def streamed_reply(
    model: Runnable[LanguageModelInput, Any],
    messages: list[BaseMessage],
    config: RunnableConfig,
    on_text: OnText,
) -> AIMessage:
    """The model's reply, streamed: each chunk's text goes to `on_text` as it comes,
    and the chunks are joined into the one message the state keeps.

    The text goes straight to the caller instead of through LangGraph's "messages"
    stream mode, which queues every chunk through the event loop's thread-safe
    scheduling (a wake-up per word) before the caller sees it."""
    chunks: list[AIMessageChunk] = []
    async for chunk in model.astream(messages, config):
        if not isinstance(chunk, AIMessageChunk):
            continue
        chunks.append(chunk)
        if text := message_text(chunk):
            await on_text(text)
    if not chunks:
        return AIMessage(content="")
    # Joined once at the end (joining as they come would copy the text per chunk).
    return cast(AIMessage, message_chunk_to_message(chunks[0] + chunks[1:]))


def message_text(message: BaseMessage) -> str:
    """The text of a message or chunk (providers may send a list of content blocks)."""
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif block.get("type") == "text":
            parts.append(str(block.get("text", "")))
    return "".join(parts)


def build_graph(
    model: BaseChatModel,
    checkpointer: BaseCheckpointSaver[Any] | None,
    settings: Settings | None = None,
) -> AgentGraph:
    """The compiled graph; `settings` gives the context window's limits
    (`context_turns`, `context_tokens`), the module defaults without it."""
    bound = model.bind_tools(TOOLS)
    max_turns = settings.context_turns if settings is not None else CONTEXT_TURNS
    max_tokens = settings.context_tokens if settings is not None else CONTEXT_TOKENS

    async def agent(state: AgentState, config: RunnableConfig) -> dict[str, Any]:
        workspace, thread_id = run_context(config)
        configurable = config.get("configurable") or {}
        memo = cast(EarlierRecords | None, configurable.get(EARLIER))
        window = await model_window(
            checkpointer,
            thread_id,
            state["messages"],
            turns=max_turns,
            tokens=max_tokens,
            memo=memo,
        )
        merged = await merged_since(workspace, thread_id, state["messages"], memo)
        prompt = await load_system_prompt(
            workspace, thread_id, omitted_turns=window.omitted_turns, merged=merged
        )
        # A turn run with a profile other than the server's: its model, its instructions.
        chosen = cast(BoundProfile | None, configurable.get(RUN_PROFILE))
        model = bound
        if chosen is not None:
            model = chosen.bound
            prompt += instructions_section(chosen.profile.instructions)
        messages = [SystemMessage(content=prompt), *model_view(window.messages)]
        on_text = cast(OnText | None, configurable.get(ON_TEXT))
        if on_text is None:
            reply = await model.ainvoke(messages, config)
        else:
            reply = await streamed_reply(model, messages, config, on_text)
        meter = cast(Meter | None, configurable.get(METER))
        if meter is not None and isinstance(reply, AIMessage):
            meter.reply(reply, messages)
        return {"messages": [reply]}

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
