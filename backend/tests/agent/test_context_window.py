"""The model's context: a window of recent whole turns bounded by `HAICO_CONTEXT_TURNS`
and by an estimated token budget `HAICO_CONTEXT_TOKENS`; the prompt says how many
earlier turns were left out. Checked on the pure function, through the runtime with
the offline model (SQLite and PostgreSQL), and against the fake OpenAI server."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGenerationChunk, ChatResult
from pydantic import Field

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.graph import TURN_INDEX_KEY
from haico.agent.models import OfflineChatModel
from haico.agent.prompts import system_prompt
from haico.agent.runtime import AgentRuntime
from haico.agent.state import CONTEXT_TOKENS, CONTEXT_TURNS, context_window, estimate_tokens
from haico.config import Settings
from haico.db.engine import Database
from haico.services.turns.agent_port import AgentWorkspace
from tests.agent.conftest import new_thread
from tests.agent.test_providers import FakeServer, openai_app

OMITTED = re.compile(r"(\d+) earlier turns? of this conversation (?:is|are) not shown")


def _turn(n: int, *, tool: bool = False, size: int = 0) -> list[AnyMessage]:
    human = HumanMessage(
        content=f"user {n}" + "x" * size, id=f"h{n}", additional_kwargs={TURN_INDEX_KEY: n}
    )
    if not tool:
        return [human, AIMessage(content=f"reply {n}", id=f"a{n}")]
    call = {"name": "add_todo", "args": {"text": "x"}, "id": f"c{n}", "type": "tool_call"}
    return [
        human,
        AIMessage(content="", tool_calls=[call], id=f"a{n}"),
        ToolMessage(content="ok", tool_call_id=f"c{n}", id=f"t{n}"),
        AIMessage(content=f"done {n}", id=f"b{n}"),
    ]


def _humans(messages: list[Any]) -> list[str]:
    return [str(m.id) for m in messages if isinstance(m, HumanMessage)]


def _omitted(prompt: str) -> int:
    m = OMITTED.search(prompt)
    return int(m[1]) if m else 0


# -- the window, as a pure function -------------------------------------------------


def test_the_settings_default_to_the_module_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("HAICO_CONTEXT_TURNS", "HAICO_CONTEXT_TOKENS", "HAICO_EVENT_POLL_SECONDS"):
        monkeypatch.delenv(name, raising=False)
    s = Settings(_env_file=None)
    assert (s.context_turns, s.context_tokens) == (CONTEXT_TURNS, CONTEXT_TOKENS)
    assert s.event_poll_seconds == 1.0
    monkeypatch.setenv("HAICO_CONTEXT_TURNS", "3")
    monkeypatch.setenv("HAICO_CONTEXT_TOKENS", "1234")
    monkeypatch.setenv("HAICO_EVENT_POLL_SECONDS", "0")
    s = Settings(_env_file=None)
    assert (s.context_turns, s.context_tokens, s.event_poll_seconds) == (3, 1234, 0.0)


def test_tokens_are_estimated_as_characters_over_four() -> None:
    assert estimate_tokens([HumanMessage(content="x" * 400)]) == 100
    assert estimate_tokens([HumanMessage(content="x" * 401)]) == 101
    call = {"name": "add_todo", "args": {"text": "x"}, "id": "c", "type": "tool_call"}
    # name (8) + '{"text": "x"}' (13) = 21 characters -> 6 tokens
    assert estimate_tokens([AIMessage(content="", tool_calls=[call])]) == 6


def test_the_window_honours_the_turn_limit() -> None:
    messages = [m for n in range(1, 7) for m in _turn(n, tool=n % 2 == 0)]
    w = context_window(messages, max_turns=2, max_tokens=10**6, turn_index_key=TURN_INDEX_KEY)
    assert _humans(w.messages) == ["h4", "h5", "h6"]
    assert (w.shown_turns, w.omitted_turns) == (2, 3)
    assert w.messages[0].id == "h4" and w.messages[-1].id == "b6"
    w = context_window(messages, max_turns=0, max_tokens=10**6)
    assert _humans(w.messages) == ["h6"] and w.omitted_turns == 5
    w = context_window(messages, max_turns=10, max_tokens=10**6)
    assert w.messages == messages and w.omitted_turns == 0


def test_the_window_honours_the_token_budget() -> None:
    # Each turn is about 100 tokens (400 characters of user text).
    messages = [m for n in range(1, 6) for m in _turn(n, tool=True, size=400)]
    per_turn = estimate_tokens(_turn(1, tool=True, size=400))
    budget = 3 * per_turn + per_turn // 2  # the current turn and two earlier ones fit
    w = context_window(messages, max_turns=10, max_tokens=budget, turn_index_key=TURN_INDEX_KEY)
    assert _humans(w.messages) == ["h3", "h4", "h5"]
    assert (w.shown_turns, w.omitted_turns) == (2, 2)
    assert w.tokens == estimate_tokens(w.messages) <= budget
    # Both limits: the tighter one wins.
    w = context_window(messages, max_turns=1, max_tokens=budget)
    assert _humans(w.messages) == ["h4", "h5"]


def test_the_current_turn_is_always_shown_whole() -> None:
    messages = _turn(1) + _turn(2, tool=True, size=4000)
    w = context_window(messages, max_turns=10, max_tokens=10, turn_index_key=TURN_INDEX_KEY)
    assert [m.id for m in w.messages] == ["h2", "a2", "t2", "b2"]
    assert w.tokens > 10 and w.omitted_turns == 1


def test_a_tool_call_and_its_result_are_never_split() -> None:
    messages = [m for n in range(1, 8) for m in _turn(n, tool=True, size=n * 37)]
    for max_turns in range(8):
        for budget in range(0, 2000, 23):
            w = context_window(messages, max_turns=max_turns, max_tokens=budget)
            assert isinstance(w.messages[0], HumanMessage)
            called = {c["id"] for m in w.messages if isinstance(m, AIMessage) for c in m.tool_calls}
            answered = {m.tool_call_id for m in w.messages if isinstance(m, ToolMessage)}
            assert called == answered
            # A contiguous suffix of whole turns.
            assert w.messages == messages[len(messages) - len(w.messages) :]


def test_turns_too_old_to_be_read_count_as_left_out() -> None:
    # Only turns 8..10 were read, but the current turn is turn 10: 1..7 exist too.
    messages = [m for n in range(8, 11) for m in _turn(n)]
    w = context_window(messages, max_turns=1, max_tokens=10**6, turn_index_key=TURN_INDEX_KEY)
    assert _humans(w.messages) == ["h9", "h10"] and w.omitted_turns == 8


def test_the_prompt_says_how_many_turns_were_left_out() -> None:
    from haico.agent.port import WorkspaceView

    ws = WorkspaceView(objective="Ship", document=None)
    assert "not shown" not in system_prompt(ws)
    assert system_prompt(ws, omitted_turns=0) == system_prompt(ws)
    prompt = system_prompt(ws, omitted_turns=7)
    assert _omitted(prompt) == 7 and "long-term memory" in prompt
    assert "1 earlier turn of this conversation is not shown" in system_prompt(ws, omitted_turns=1)
    # The summary line the offline model reads is still there.
    assert prompt.rstrip().splitlines()[-1].startswith("Workspace summary: ")


# -- through the runtime (offline model, both databases) -----------------------------


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


@asynccontextmanager
async def runtime_with(
    settings: Settings, db: Database, model: BaseChatModel, **limits: int
) -> AsyncIterator[AgentRuntime]:
    configured = settings.model_copy(update=limits)
    await setup_checkpointer(configured)
    rt = AgentRuntime(configured, AgentWorkspace(db))
    rt.model = model
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


def _user_texts(call: list[BaseMessage]) -> list[str]:
    return [str(m.content) for m in call if isinstance(m, HumanMessage)]


async def test_the_runtime_shows_the_model_context_turns_earlier_turns(
    settings: Settings, db: Database
) -> None:
    model = RecordingModel()
    async with runtime_with(settings, db, model, context_turns=2, context_tokens=10**6) as rt:
        thread = await new_thread(rt)
        texts = [f"todo: t{i}" if i % 2 else f"message {i}" for i in range(1, 7)]
        for i, text in enumerate(texts, start=1):
            model.calls.clear()
            await thread.turn(text)
            assert model.calls
            for call in model.calls:
                assert isinstance(call[0], SystemMessage)
                assert _user_texts(call) == texts[max(0, i - 3) : i]
                assert _omitted(str(call[0].content)) == max(0, i - 3)
        # The transcript itself keeps every turn.
        transcript = await rt.messages(thread.thread_id)
    assert [m.content for m in transcript if m.role == "user"] == texts


async def test_the_runtime_honours_the_token_budget(settings: Settings, db: Database) -> None:
    model = RecordingModel()
    big = "x" * 4000  # about 1,000 tokens per user message
    async with runtime_with(settings, db, model, context_turns=10, context_tokens=2500) as rt:
        thread = await new_thread(rt)
        texts = [f"message {i} {big}" for i in range(1, 5)]
        for i, text in enumerate(texts, start=1):
            model.calls.clear()
            await thread.turn(text)
            (call,) = model.calls
            # The current turn and the one before it fit in 2,500; two earlier do not.
            assert _user_texts(call) == texts[max(0, i - 2) : i]
            assert _omitted(str(call[0].content)) == max(0, i - 2)


# -- against a real provider protocol (the fake OpenAI server) -----------------------


@pytest.mark.parametrize(
    ("limits", "size"),
    [({"context_turns": 1, "context_tokens": 10**6}, 0), ({"context_tokens": 2500}, 4000)],
    ids=["turns", "tokens"],
)
async def test_the_provider_sees_only_the_window(
    settings: Settings, db: Database, limits: dict[str, int], size: int
) -> None:
    requests: list[dict[str, Any]] = []
    provider = settings.model_copy(
        update={
            "llm": "openai",
            "llm_base_url": None,
            "llm_api_key": "test-key",
            "llm_model": "fake-model",
            **limits,
        }
    )
    with FakeServer(openai_app(requests)) as server:
        provider = provider.model_copy(
            update={"llm_base_url": f"http://127.0.0.1:{server.port}/v1"}
        )
        await setup_checkpointer(provider)
        rt = AgentRuntime(provider, AgentWorkspace(db))
        await rt.start()
        try:
            thread = await new_thread(rt)
            texts = [f"message {i} " + "y" * size for i in range(1, 5)]
            for text in texts:
                await thread.turn(text)
            transcript = await rt.messages(thread.thread_id)
        finally:
            await rt.close()
    assert [m.content for m in transcript if m.role == "user"] == texts
    # Each turn is two requests: the tool call, then the answer after its result.
    assert len(requests) == 2 * len(texts)
    for body in requests[-2:]:
        roles = [m["role"] for m in body["messages"]]
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        assert roles[0] == "system"
        assert users == texts[-2:]  # the window: one earlier turn and the current one
        assert _omitted(body["messages"][0]["content"]) == 2
        assert "long-term memory" in body["messages"][0]["content"]
        # The earlier turn's tool call travels with its result.
        calls = [c["id"] for m in body["messages"] for c in m.get("tool_calls") or []]
        results = [m["tool_call_id"] for m in body["messages"] if m["role"] == "tool"]
        assert sorted(calls) == sorted(results) and calls


async def test_a_turn_reads_the_earlier_turns_once_whatever_its_tool_rounds(
    settings: Settings, db: Database, earlier_reads: list[str]
) -> None:
    """The earlier turns cannot change while a turn runs: the model's call after a
    round of tool calls sees them as the first call did, without reading them again."""
    reads = earlier_reads
    model = RecordingModel()
    async with runtime_with(settings, db, model, context_turns=5, context_tokens=10**6) as rt:
        thread = await new_thread(rt)
        await thread.turn("message 1")
        reads.clear()
        model.calls.clear()
        await thread.turn("todo: a; prefer: b")
        assert len(model.calls) == 2  # the tool calls, then the answer
        assert reads == [thread.thread_id]
        for call in model.calls:
            assert _user_texts(call) == ["message 1", "todo: a; prefer: b"]
        # The next turn reads again, and sees the turn before it.
        reads.clear()
        model.calls.clear()
        await thread.turn("message 3")
        assert reads == [thread.thread_id]
        assert _user_texts(model.calls[0]) == ["message 1", "todo: a; prefer: b", "message 3"]


async def test_a_current_early_read_is_the_runs_only_read(
    settings: Settings, db: Database, earlier_reads: list[str]
) -> None:
    """The read started while the turn opens (`read_earlier`) is what the model's
    first call sees: the run reads nothing more, on the first turn (no earlier turns)
    as on later ones."""
    model = RecordingModel()
    async with runtime_with(settings, db, model, context_turns=5, context_tokens=10**6) as rt:
        thread = await new_thread(rt)
        for i in range(1, 4):
            earlier_reads.clear()
            model.calls.clear()
            await thread.turn(f"message {i}", early=rt.read_earlier(thread.thread_id))
            assert earlier_reads == [thread.thread_id]
            assert _user_texts(model.calls[0]) == [f"message {n}" for n in range(1, i + 1)]


async def test_an_early_read_that_missed_a_turn_is_read_again(
    settings: Settings, db: Database, earlier_reads: list[str]
) -> None:
    """A read started before the previous turn was recorded (a send racing the end of
    the turn before it) lacks that turn: the run reads again and the model sees it."""
    model = RecordingModel()
    async with runtime_with(settings, db, model, context_turns=5, context_tokens=10**6) as rt:
        thread = await new_thread(rt)
        await thread.turn("message 1")
        stale = rt.read_earlier(thread.thread_id)
        await stale  # it saw turn 1 only
        await thread.turn("message 2")
        earlier_reads.clear()
        model.calls.clear()
        await thread.turn("message 3", early=stale)
        assert earlier_reads == [thread.thread_id]  # the run's own read
        assert _user_texts(model.calls[0]) == ["message 1", "message 2", "message 3"]


async def test_an_early_read_that_failed_is_read_again(
    settings: Settings, db: Database, earlier_reads: list[str]
) -> None:
    model = RecordingModel()
    async with runtime_with(settings, db, model, context_turns=5, context_tokens=10**6) as rt:
        thread = await new_thread(rt)
        await thread.turn("message 1")
        failed: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()
        failed.set_exception(ConnectionError("the checkpointer went away"))
        earlier_reads.clear()
        await thread.turn("message 2", early=failed)
        assert earlier_reads == [thread.thread_id]
        assert _user_texts(model.calls[-1]) == ["message 1", "message 2"]
