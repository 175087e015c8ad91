"""A fake OpenAI-compatible server for the research ledger's tests: it records every
request body and reports usage when asked (`stream_options.include_usage`), unless
made not to (`usage=False`), so provenance can be checked against exact counts. With
`fail=True` the answering call streams PARTIAL and then a provider error event (a model
error mid-reply: the tool call before it was counted, the partial text was not)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse

from tests.agent.test_providers import FakeServer

MODEL = "fake-gpt"
# (prompt, completion) tokens each call reports: the tool call, then the answer.
USAGE = [(100, 7), (120, 5)]
ANSWER = ["Added ", "the ", "todo."]
PARTIAL = ["Adding ", "the todo, "]


@dataclass
class Fake:
    usage: bool = True
    fail: bool = False
    requests: list[dict[str, Any]] = field(default_factory=list)

    def bodies(self) -> str:
        """Every request the model was sent, as one text."""
        return "\n".join(json.dumps(r) for r in self.requests)


def _chunk(delta: dict[str, Any] | None, finish: str | None = None) -> dict[str, Any]:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {
        "id": "c",
        "object": "chat.completion.chunk",
        "created": 0,
        "model": MODEL,
        "choices": choices,
    }


def fake_openai_app(fake: Fake) -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> StreamingResponse:
        body = await request.json()
        fake.requests.append(body)
        answered = body["messages"][-1]["role"] == "tool"
        chunks: list[dict[str, Any]] = []
        if not answered:
            call = {"index": 0, "id": "call_1", "type": "function"}
            fn = {"name": "add_todo", "arguments": json.dumps({"text": "from the fake"})}
            chunks.append(
                _chunk(
                    {"role": "assistant", "content": None, "tool_calls": [{**call, "function": fn}]}
                )
            )
            chunks.append(_chunk({}, "tool_calls"))
        else:
            chunks.append(_chunk({"role": "assistant", "content": ""}))
            if fake.fail:
                chunks += [_chunk({"content": w}) for w in PARTIAL]
                chunks.append({"error": {"message": "the model is overloaded", "code": 529}})
            else:
                chunks += [_chunk({"content": w}) for w in ANSWER]
                chunks.append(_chunk({}, "stop"))
        wants = (body.get("stream_options") or {}).get("include_usage")
        if fake.usage and wants and not (answered and fake.fail):
            prompt, completion = USAGE[1 if answered else 0]
            last = _chunk(None)
            last["usage"] = {
                "prompt_tokens": prompt,
                "completion_tokens": completion,
                "total_tokens": prompt + completion,
            }
            chunks.append(last)

        async def stream() -> AsyncIterator[bytes]:
            for c in chunks:
                yield f"data: {json.dumps(c)}\n\n".encode()
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    return app


__all__ = ["ANSWER", "MODEL", "PARTIAL", "USAGE", "Fake", "FakeServer", "fake_openai_app"]
