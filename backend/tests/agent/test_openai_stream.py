"""The lean reader of OpenAI-compatible streams (`haico.agent.openai_stream`).

A fake server plays one scripted answer per test: text with SSE comments and ids in
between, an error event in the middle of the stream, an HTTP error, a stream that
stalls. A researcher must see the same tokens as before, and every failure must end
the turn with a clear error while the text streamed so far stays in the transcript.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.models import make_chat_model
from haico.agent.openai_stream import (
    LeanChatOpenAI,
    StreamStalled,
    sse_payloads,
    untransformed,
)
from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.domain import NodeState
from haico.services.turns.agent_port import AgentWorkspace
from tests.agent.conftest import Thread, new_thread
from tests.agent.test_providers import FakeServer

WORDS = ["Streamed ", "without ", "the ", "SDK's ", "models."]


def _chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    body = {
        "id": "chatcmpl-lean",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": "fake",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return f"data: {json.dumps(body)}\n\n"


def scripted_app(script: dict[str, str], received: list[dict[str, Any]]) -> FastAPI:
    """Answers every request the way `script["mode"]` says; keeps each request's JSON."""
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> Response:
        received.append(json.loads(await request.body()))
        mode = script["mode"]
        if mode == "unauthorized":
            error = {"message": "bad key for this fake", "type": "invalid_request_error"}
            return JSONResponse({"error": error}, status_code=401)

        async def body() -> AsyncIterator[bytes]:
            yield _chunk({"role": "assistant", "content": ""}).encode()
            for i, word in enumerate(WORDS[:2] if mode != "text" else WORDS):
                # Comments and ids are part of SSE; the reader must skip them.
                yield f": keepalive\nid: {i}\n{_chunk({'content': word})}".encode()
            if mode == "error_event":
                yield b'data: {"error": {"message": "the fake model is overloaded"}}\n\n'
                return
            if mode == "stall":
                await asyncio.sleep(5)
            yield _chunk({}, "stop").encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    return app


@pytest.fixture
def received() -> list[dict[str, Any]]:
    return []


@pytest.fixture
def fake(received: list[dict[str, Any]]) -> Iterator[tuple[str, dict[str, str]]]:
    script = {"mode": "text"}
    with FakeServer(scripted_app(script, received)) as server:
        yield f"http://127.0.0.1:{server.port}/v1", script


@pytest.fixture
async def openai_thread(
    settings: Settings,
    db: Database,
    fake: tuple[str, dict[str, str]],
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[Thread]:
    monkeypatch.setenv("LANGCHAIN_OPENAI_STREAM_CHUNK_TIMEOUT_S", "0.5")
    provider = settings.model_copy(
        update={"llm": "openai", "llm_base_url": fake[0], "llm_api_key": "k", "llm_model": "m"}
    )
    await setup_checkpointer(provider)
    rt = AgentRuntime(provider, AgentWorkspace(db))
    await rt.start()
    try:
        yield await new_thread(rt)
    finally:
        await rt.close()


def test_openai_settings_pick_the_lean_reader(settings: Settings) -> None:
    model = make_chat_model(settings.model_copy(update={"llm": "openai"}))
    assert isinstance(model, LeanChatOpenAI)


async def test_tokens_arrive_one_by_one_past_comments_and_ids(openai_thread: Thread) -> None:
    reply = await openai_thread.turn("hello")
    assert reply == "".join(WORDS)
    assert [e["text"] for e in openai_thread.kinds("token")] == WORDS
    messages = await openai_thread.rt.messages(openai_thread.thread_id)
    assert [(m.role, m.content) for m in messages[-2:]] == [
        ("user", "hello"),
        ("assistant", "".join(WORDS)),
    ]


async def test_the_provider_receives_the_whole_conversation(
    openai_thread: Thread, received: list[dict[str, Any]]
) -> None:
    """The request body goes to the SDK untransformed (`untransformed`): what the
    provider receives is still every message, the model and the streaming options."""
    await openai_thread.turn("first question")
    await openai_thread.turn("second question")
    body = received[-1]
    assert body["model"] == "m" and body["stream"] is True
    roles = [m["role"] for m in body["messages"]]
    assert roles[0] == "system" and roles[1:] == ["user", "assistant", "user"]
    assert [m["content"] for m in body["messages"][1:]] == [
        "first question",
        "".join(WORDS),
        "second question",
    ]
    assert isinstance(body["tools"], list) and body["tools"]


def test_extra_body_keys_join_the_body_and_call_options_stay_options() -> None:
    payload = {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "temperature": 0.2,
        "extra_body": {"ttl": 300},
        "extra_headers": {"X-Trace": "1"},
        "timeout": 7.0,
    }
    args = untransformed(payload)
    assert args["extra_body"] == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
        "stream": True,
        "temperature": 0.2,
        "ttl": 300,
    }
    assert args["extra_headers"] == {"X-Trace": "1"} and args["timeout"] == 7.0
    assert (args["model"], args["messages"], args["stream"]) == ("m", [], True)


async def _failed_turn(thread: Thread) -> BaseException:
    with pytest.raises(Exception) as failure:
        await thread.turn("hello")
    return failure.value


async def test_an_error_event_ends_the_turn_and_keeps_the_text_so_far(
    openai_thread: Thread, fake: tuple[str, dict[str, str]]
) -> None:
    fake[1]["mode"] = "error_event"
    error = await _failed_turn(openai_thread)
    assert isinstance(error, openai.APIError)
    assert "the fake model is overloaded" in str(error)
    assert [e["text"] for e in openai_thread.kinds("token")] == WORDS[:2]
    last = (await openai_thread.rt.messages(openai_thread.thread_id))[-1]
    assert (last.role, last.content, last.extra.get("state")) == (
        "assistant",
        "".join(WORDS[:2]),
        "error",
    )


async def test_an_http_error_is_the_providers_message(
    openai_thread: Thread, fake: tuple[str, dict[str, str]]
) -> None:
    fake[1]["mode"] = "unauthorized"
    error = await _failed_turn(openai_thread)
    assert isinstance(error, openai.AuthenticationError)
    assert "bad key for this fake" in str(error)
    assert openai_thread.kinds("token") == []


async def test_a_stalled_stream_fails_after_the_chunk_timeout(
    openai_thread: Thread, fake: tuple[str, dict[str, str]]
) -> None:
    fake[1]["mode"] = "stall"
    started = time.monotonic()
    error = await _failed_turn(openai_thread)
    assert isinstance(error, StreamStalled)
    assert "0.5 s" in str(error)
    assert time.monotonic() - started < 4  # the fake would go on after 5 s
    last = (await openai_thread.rt.messages(openai_thread.thread_id))[-1]
    assert (last.content, last.extra.get("state")) == ("".join(WORDS[:2]), NodeState.ERROR)


async def test_the_sse_reader_joins_data_lines_and_names_events() -> None:
    async def lines() -> AsyncIterator[str]:
        for line in [": hello", "event: error", "data: {", "data: }", "", "id: 3", "data:x"]:
            yield line

    assert [e async for e in sse_payloads(lines())] == [("error", "{\n}"), (None, "x")]
