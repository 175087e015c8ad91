"""The real-provider paths, against fake OpenAI and Anthropic servers on 127.0.0.1.

Each fake streams a tool call on the first request and a text answer once the tool
result comes back, the way the real APIs do; the turn must apply the tool call to the
workspace and stream the answer as tokens.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.services.turns.agent_port import AgentWorkspace
from tests.agent.conftest import new_thread

ANSWER = ["Added ", "the ", "todo ", "for ", "you."]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class FakeServer:
    """A FastAPI app served by uvicorn in a thread; `requests` keeps every JSON body."""

    def __init__(self, app: FastAPI) -> None:
        self.port = _free_port()
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> FakeServer:
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            assert time.monotonic() < deadline, "fake server did not start"
            time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def _sse(events: list[tuple[str | None, dict[str, Any] | str]]) -> StreamingResponse:
    async def body() -> AsyncIterator[bytes]:
        for name, data in events:
            payload = data if isinstance(data, str) else json.dumps(data)
            head = f"event: {name}\n" if name else ""
            yield f"{head}data: {payload}\n\n".encode()

    return StreamingResponse(body(), media_type="text/event-stream")


def openai_app(requests: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake-gpt",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> StreamingResponse:
        body = await request.json()
        requests.append(body)
        events: list[tuple[str | None, dict[str, Any] | str]] = []
        if body["messages"][-1]["role"] != "tool":
            call = {"index": 0, "id": "call_fake1", "type": "function"}
            events.append(
                (
                    None,
                    chunk(
                        {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {**call, "function": {"name": "add_todo", "arguments": ""}}
                            ],
                        }
                    ),
                )
            )
            for part in ['{"text": "from ', 'openai"}']:
                events.append(
                    (None, chunk({"tool_calls": [{"index": 0, "function": {"arguments": part}}]}))
                )
            events.append((None, chunk({}, "tool_calls")))
        else:
            events.append((None, chunk({"role": "assistant", "content": ""})))
            events += [(None, chunk({"content": word})) for word in ANSWER]
            events.append((None, chunk({}, "stop")))
        events.append((None, "[DONE]"))
        return _sse(events)

    return app


def anthropic_app(requests: list[dict[str, Any]]) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/messages")
    async def messages(request: Request) -> StreamingResponse:
        body = await request.json()
        requests.append(body)
        usage = {"input_tokens": 10, "output_tokens": 1}
        start = {
            "type": "message_start",
            "message": {
                "id": "msg_fake",
                "type": "message",
                "role": "assistant",
                "model": "fake-claude",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": usage,
            },
        }
        events: list[tuple[str | None, dict[str, Any] | str]] = [("message_start", start)]
        last = body["messages"][-1]["content"]
        answered = isinstance(last, list) and any(b.get("type") == "tool_result" for b in last)
        if not answered:
            block = {"type": "tool_use", "id": "toolu_fake1", "name": "add_todo", "input": {}}
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": block},
                )
            )
            for part in ['{"text": "from ', 'anthropic"}']:
                delta = {"type": "input_json_delta", "partial_json": part}
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": delta},
                    )
                )
            stop = "tool_use"
        else:
            block = {"type": "text", "text": ""}
            events.append(
                (
                    "content_block_start",
                    {"type": "content_block_start", "index": 0, "content_block": block},
                )
            )
            for word in ANSWER:
                delta = {"type": "text_delta", "text": word}
                events.append(
                    (
                        "content_block_delta",
                        {"type": "content_block_delta", "index": 0, "delta": delta},
                    )
                )
            stop = "end_turn"
        events += [
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            ),
            ("message_stop", {"type": "message_stop"}),
        ]
        return _sse(events)

    return app


@pytest.fixture
def openai_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    requests: list[dict[str, Any]] = []
    with FakeServer(openai_app(requests)) as server:
        yield f"http://127.0.0.1:{server.port}/v1", requests


@pytest.fixture
def anthropic_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    requests: list[dict[str, Any]] = []
    with FakeServer(anthropic_app(requests)) as server:
        yield f"http://127.0.0.1:{server.port}", requests


async def _turn_through(settings: Settings, db: Database, provider: str, base_url: str) -> Any:
    provider_settings = settings.model_copy(
        update={
            "llm": provider,
            "llm_base_url": base_url,
            "llm_api_key": "test-key",
            "llm_model": "fake-model",
        }
    )
    await setup_checkpointer(provider_settings)
    rt = AgentRuntime(provider_settings, AgentWorkspace(db))
    await rt.start()
    try:
        thread = await new_thread(rt)
        await thread.turn("objective: ignored by the fake")  # any text: the fake decides
        reply = await thread.turn("please add a todo")
        return thread, reply, await rt.messages(thread.thread_id)
    finally:
        await rt.close()


async def test_openai_compatible_provider_drives_a_tool_call(
    settings: Settings, db: Database, openai_server: tuple[str, list[dict[str, Any]]]
) -> None:
    base_url, requests = openai_server
    thread, reply, messages = await _turn_through(settings, db, "openai", base_url)
    assert reply == "".join(ANSWER)
    assert [e["text"] for e in thread.kinds("token")] == ANSWER
    assert thread.kinds("tool_call") == [{"name": "add_todo", "args": {"text": "from openai"}}]
    assert thread.kinds("workspace_changed") == [{"surfaces": ["todos"]}]
    assert [t.text for t in (await thread.workspace()).todos] == ["from openai", "from openai"]

    first, second = requests[-2:]
    assert first["stream"] is True and first["model"] == "fake-model"
    assert "add_todo" in {t["function"]["name"] for t in first["tools"]}
    assert first["messages"][0]["role"] == "system"
    tool_msg = [m for m in second["messages"] if m["role"] == "tool"][-1]
    assert tool_msg["tool_call_id"] == "call_fake1"
    assert [m.role for m in messages[-4:]] == ["user", "assistant", "tool", "assistant"]


async def test_anthropic_provider_drives_a_tool_call(
    settings: Settings, db: Database, anthropic_server: tuple[str, list[dict[str, Any]]]
) -> None:
    base_url, requests = anthropic_server
    thread, reply, messages = await _turn_through(settings, db, "anthropic", base_url)
    assert reply == "".join(ANSWER)
    assert [e["text"] for e in thread.kinds("token")] == ANSWER
    assert thread.kinds("tool_call") == [{"name": "add_todo", "args": {"text": "from anthropic"}}]
    assert thread.kinds("workspace_changed") == [{"surfaces": ["todos"]}]
    assert [t.text for t in (await thread.workspace()).todos] == [
        "from anthropic",
        "from anthropic",
    ]

    first = requests[-2]
    assert first["stream"] is True and first["model"] == "fake-model"
    assert "add_todo" in {t["name"] for t in first["tools"]}
    assert "Binding constraints" in json.dumps(first["system"])
    assert [m.role for m in messages[-4:]] == ["user", "assistant", "tool", "assistant"]
