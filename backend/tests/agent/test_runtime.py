"""The agent runtime through `run_turn`, on SQLite and Postgres."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import Field

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.models import OfflineChatModel, split_words
from haico.agent.runtime import AgentRuntime
from haico.agent.state import CONTEXT_TURNS
from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import Conversation
from haico.domain import NodeState
from haico.services.turns.agent_port import AgentWorkspace
from haico.services.workspace import edits as workspace
from tests.agent.conftest import Thread, new_thread
from tests.helpers import as_user


@asynccontextmanager
async def runtime_with(
    settings: Settings, db: Database, model: BaseChatModel
) -> AsyncIterator[AgentRuntime]:
    await setup_checkpointer(settings)
    rt = AgentRuntime(settings, AgentWorkspace(db))
    rt.model = model
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


class RecordingModel(OfflineChatModel):
    """The offline model, keeping every message list it was called with."""

    calls: list[list[BaseMessage]] = Field(default_factory=list)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        self.calls.append(list(messages))
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            yield chunk

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.calls.append(list(messages))
        return await super()._agenerate(messages, stop, run_manager, **kwargs)


class FailingModel(OfflineChatModel):
    """Calls tools like the offline model, then dies three words into its answer."""

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        sent = 0
        async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
            if chunk.message.content and sent == 3:
                raise RuntimeError("provider went away")
            sent += bool(chunk.message.content)
            yield chunk


async def test_every_offline_command_edits_the_workspace(thread: Thread) -> None:
    await thread.turn("objective: Ship v1\ntitle: Plan\nwrite: First para\nWRITE: Second para")
    ws = await thread.workspace()
    assert ws.objective == "Ship v1"
    assert ws.document is not None
    assert (ws.document.title, ws.document.content) == ("Plan", "First para\n\nSecond para")
    assert thread.kinds("workspace_changed") == [{"surfaces": ["objective", "document"]}]

    await thread.turn("Replace Document: Fresh body")
    ws = await thread.workspace()
    assert ws.document is not None
    assert (ws.document.title, ws.document.content) == ("Plan", "Fresh body")

    await thread.turn("prefer: concise; prefer: cite sources; PREFER: no jargon")
    await thread.turn("lock preference 2; Lock Preference 3")
    ws = await thread.workspace()
    assert [(p.text, p.locked) for p in ws.preferences] == [
        ("concise", False),
        ("cite sources", True),
        ("no jargon", True),
    ]
    await thread.turn("unlock preference 3; remove preference 1")
    ws = await thread.workspace()
    assert [(p.text, p.locked) for p in ws.preferences] == [
        ("cite sources", True),
        ("no jargon", False),
    ]
    assert thread.kinds("workspace_changed") == [{"surfaces": ["preferences"]}]

    await thread.turn("todo: a; add todo: b\nsubtodo: b1\nsubtodo: b1x")
    ws = await thread.workspace()
    assert [(t.text, t.depth) for t in ws.todos] == [("a", 0), ("b", 0), ("b1", 1), ("b1x", 2)]
    await thread.turn("done todo 1; done todo 2; undo todo 2; remove todo 4")
    ws = await thread.workspace()
    assert [(t.text, t.done) for t in ws.todos] == [("a", True), ("b", False), ("b1", False)]

    await thread.turn("artifact Summary: the content: with a colon")
    ws = await thread.workspace()
    assert [(a.title, a.turn_index) for a in ws.artifacts] == [("Summary", 8)]
    art = await workspace.get_artifact(
        thread.db,
        principal=as_user(thread.user_id),
        thread_id=thread.thread_id,
        artifact_id=ws.artifacts[0].id,
    )
    assert art.content == "the content: with a colon"
    assert thread.kinds("tool_call") == [
        {
            "name": "create_artifact",
            "args": {"title": "Summary", "content": "the content: with a colon"},
        }
    ]
    assert thread.kinds("workspace_changed") == [{"surfaces": ["artifacts"]}]


async def test_a_bad_position_is_reported_to_the_model_not_raised(thread: Thread) -> None:
    await thread.turn("prefer: one")
    reply = await thread.turn("lock preference 9; todo: still added")
    assert "no preference at position 9" in reply
    ws = await thread.workspace()
    assert [p.locked for p in ws.preferences] == [False]
    assert [t.text for t in ws.todos] == ["still added"]
    assert thread.kinds("workspace_changed") == [{"surfaces": ["todos"]}]
    tool_results = [m for m in await thread.rt.messages(thread.thread_id) if m.role == "tool"]
    assert tool_results[-2].content.startswith("Error:")
    assert tool_results[-2].extra["status"] == "error"


async def test_plain_text_streams_word_by_word(thread: Thread) -> None:
    reply = await thread.turn("what do we have so far?")
    tokens = [e["text"] for e in thread.kinds("token")]
    assert len(tokens) >= 5
    assert "".join(tokens) == reply
    assert "no objective yet" in reply
    assert thread.kinds("tool_call") == [] and thread.kinds("workspace_changed") == []


async def test_wait_streams_the_reply_over_the_requested_time(thread: Thread) -> None:
    stamps: list[float] = []
    index = await thread.advance()

    async def on_event(event: Any) -> None:
        stamps.append(time.perf_counter())

    started = time.perf_counter()
    await thread.rt.run_turn(
        thread_id=thread.thread_id, turn_index=index, user_message="wait: 1", on_event=on_event
    )
    assert len(stamps) >= 5
    assert stamps[0] - started < 0.6  # the first word does not wait for the whole reply
    assert stamps[-1] - stamps[0] >= 0.6


async def test_prompt_is_rebuilt_each_turn_with_locked_preferences_binding(
    settings: Settings, db: Database
) -> None:
    model = RecordingModel()
    async with runtime_with(settings, db, model) as rt:
        thread = await new_thread(rt)
        await thread.turn("objective: Write the survey; prefer: British spelling; prefer: be brief")
        await thread.turn("lock preference 1; todo: outline; subtodo: intro")
        model.calls.clear()
        await thread.turn("hello")
    (prompt,) = [m.content for m in model.calls[0] if isinstance(m, SystemMessage)]
    assert isinstance(prompt, str)
    binding = prompt.split("## Binding constraints", 1)[1].split("## Preferences", 1)[0]
    assert "British spelling" in binding and "MUST" in binding
    assert "be brief" not in binding
    assert "Write the survey" in prompt
    assert "1. [ ] outline (depth 0)" in prompt and "  2. [ ] intro (depth 1)" in prompt


def _pairs_intact(messages: list[BaseMessage]) -> bool:
    called = {c["id"] for m in messages if isinstance(m, AIMessage) for c in m.tool_calls}
    answered = {m.tool_call_id for m in messages if isinstance(m, ToolMessage)}
    return called == answered


async def test_the_model_sees_a_bounded_window_of_recent_turns(
    settings: Settings, db: Database
) -> None:
    model = RecordingModel()
    turns = CONTEXT_TURNS + 5
    async with runtime_with(settings, db, model) as rt:
        thread = await new_thread(rt)
        texts = [f"todo: t{i}" if i % 2 else f"message {i}" for i in range(1, turns + 1)]
        for i, text in enumerate(texts, start=1):
            model.calls.clear()
            await thread.turn(text)
            # Every call of the turn: the prompt, then whole turns, the latest last.
            for call in model.calls:
                assert isinstance(call[0], SystemMessage) and isinstance(call[1], HumanMessage)
                humans = [m.content for m in call if isinstance(m, HumanMessage)]
                assert humans == texts[max(0, i - 1 - CONTEXT_TURNS) : i]
                assert _pairs_intact(call)
                assert not any(k.startswith("haico_") for m in call for k in m.additional_kwargs)
        transcript = await rt.messages(thread.thread_id)
    assert [m.content for m in transcript if m.role == "user"] == texts


async def test_the_window_holds_an_interrupted_turn_once(settings: Settings, db: Database) -> None:
    model = RecordingModel()
    async with runtime_with(settings, db, model) as rt:
        thread = await new_thread(rt)
        await thread.turn("hello")
        async with runtime_with(settings, db, FailingModel()) as failing:
            thread.rt = failing
            with pytest.raises(RuntimeError, match="provider went away"):
                await thread.turn("todo: survives the failure")
        thread.rt = rt
        model.calls.clear()
        await thread.turn("what now?")
    (call,) = model.calls
    humans = [m.content for m in call if isinstance(m, HumanMessage)]
    assert humans == ["hello", "todo: survives the failure", "what now?"]
    assert _pairs_intact(call)
    partial = [m for m in call if isinstance(m, AIMessage)][-1]
    assert partial.content and "haico_state" not in partial.additional_kwargs


async def test_a_failing_model_leaves_the_message_and_partial_reply(
    settings: Settings, db: Database, runtime: AgentRuntime
) -> None:
    async with runtime_with(settings, db, FailingModel()) as failing:
        thread = await new_thread(failing)
        with pytest.raises(RuntimeError, match="provider went away"):
            await thread.turn("todo: survives the failure")
        streamed = "".join(e["text"] for e in thread.kinds("token"))
    assert len(split_words(streamed)) == 3

    # The tool ran before the failure and its edit stays.
    assert [t.text for t in (await thread.workspace()).todos] == ["survives the failure"]
    messages = await runtime.messages(thread.thread_id)
    assert [(m.role, m.turn_index) for m in messages] == [
        ("user", 1),
        ("assistant", 1),
        ("tool", 1),
        ("assistant", 1),
    ]
    assert messages[0].content == "todo: survives the failure"
    assert messages[-1].content == streamed
    assert messages[-1].extra["state"] == NodeState.ERROR

    # The thread carries on with a working model.
    thread.rt = runtime
    await thread.turn("hello")
    messages = await runtime.messages(thread.thread_id)
    assert [(m.role, m.turn_index) for m in messages[-2:]] == [("user", 2), ("assistant", 2)]
    assert "state" not in messages[-1].extra


async def test_a_cancelled_turn_keeps_the_message_and_partial_reply(thread: Thread) -> None:
    task = asyncio.create_task(thread.turn("wait: 10"))
    for _ in range(200):
        if len(thread.kinds("token")) >= 3:
            break
        await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    streamed = "".join(e["text"] for e in thread.kinds("token"))
    assert streamed

    messages = await thread.rt.messages(thread.thread_id)
    assert [(m.role, m.content) for m in messages] == [
        ("user", "wait: 10"),
        ("assistant", streamed),
    ]
    assert messages[1].extra["state"] == NodeState.CANCELLED

    reply = await thread.turn("todo: next")
    assert reply.startswith("Done.")
    messages = await thread.rt.messages(thread.thread_id)
    assert [m.turn_index for m in messages if m.role == "user"] == [1, 2]


async def test_seed_copies_a_transcript_prefix_into_a_new_thread(
    runtime: AgentRuntime, thread: Thread
) -> None:
    await thread.turn("todo: first")
    await thread.turn("hello")
    await thread.turn("prefer: third")
    original = await runtime.messages(thread.thread_id)
    raw = await runtime.raw_messages(thread.thread_id)
    prefix = [m for m, t in zip(raw, original, strict=True) if t.turn_index <= 2]

    branch = await new_thread(runtime, "branch")
    metadata = {"seeded_from": thread.thread_id, "branch_point_turn": 2}
    await runtime.seed(thread_id=branch.thread_id, messages=prefix, metadata=metadata)

    seeded = await runtime.messages(branch.thread_id)
    assert seeded == [m for m in original if m.turn_index <= 2]
    assert store_metadata(await _latest(runtime, branch.thread_id)) == metadata
    assert await runtime.messages(thread.thread_id) == original

    # The branch continues like any thread, from turn 3 of its own clock.
    async with branch.db.transaction() as s:
        conv = await s.get(Conversation, branch.thread_id)
        assert conv is not None
        conv.turn_index = 2
    await branch.turn("todo: on the branch")
    messages = await runtime.messages(branch.thread_id)
    assert messages[: len(seeded)] == seeded
    assert [m.turn_index for m in messages if m.role == "user"] == [1, 2, 3]
    assert messages[-1].content.startswith("Done.")


def store_metadata(metadata: dict[str, Any]) -> dict[str, Any]:
    return {k: metadata[k] for k in ("seeded_from", "branch_point_turn") if k in metadata}


async def _latest(runtime: AgentRuntime, thread_id: str) -> dict[str, Any]:
    assert runtime.store is not None
    saver = runtime.store.for_thread(thread_id)
    tup = await saver.aget_tuple({"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}})
    assert tup is not None
    return dict(tup.metadata)


async def test_delete_thread_removes_the_transcript(runtime: AgentRuntime, thread: Thread) -> None:
    await thread.turn("todo: gone soon")
    other = await new_thread(runtime)
    await other.turn("todo: stays")
    await runtime.delete_thread(thread.thread_id)
    assert await runtime.messages(thread.thread_id) == []
    assert await runtime.raw_messages(thread.thread_id) == []
    assert len(await runtime.messages(other.thread_id)) == 4


async def test_tool_messages_carry_names_and_calls(runtime: AgentRuntime, thread: Thread) -> None:
    await thread.turn("todo: x")
    raw = await runtime.raw_messages(thread.thread_id)
    assert any(isinstance(m, ToolMessage) and m.artifact == {"surfaces": ["todos"]} for m in raw)
    messages = await runtime.messages(thread.thread_id)
    call = messages[1].extra["tool_calls"][0]
    assert (call["name"], call["args"]) == ("add_todo", {"text": "x"})
    assert messages[2].extra["name"] == "add_todo"
    assert messages[2].extra["tool_call_id"] == call["id"]


async def test_seeding_an_empty_prefix_starts_a_clean_thread(runtime: AgentRuntime) -> None:
    branch = await new_thread(runtime, "branch at 0")
    await runtime.seed(thread_id=branch.thread_id, messages=[], metadata={"branch_point_turn": 0})
    assert await runtime.messages(branch.thread_id) == []
    await branch.turn("todo: first of the branch")
    messages = await runtime.messages(branch.thread_id)
    assert [m.turn_index for m in messages] == [1, 1, 1, 1]
