"""The OpenAI-compatible chat model, with a lean reader for its streamed answers.

`ChatOpenAI` hands every streamed chunk to the openai SDK, which builds a pydantic
model of it that langchain-openai then dumps back to a dict; and it waits for each
chunk with `asyncio.wait_for`, which starts a task per chunk. With many turns
streaming at once that was about a fifth of the server's CPU (see
docs/performance.md). `LeanChatOpenAI` sends the same request through the same SDK
client (auth, retries, HTTP errors are unchanged), but reads the server-sent events
itself: each `data:` payload is parsed once with `json.loads` and given to
langchain-openai's own dict-to-chunk conversion. The request's body, JSON already,
is not walked again by the SDK (`untransformed`).

The Responses API, structured output and response headers keep the stock path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

import openai
from langchain_core.callbacks import AsyncCallbackManagerForLLMRun
from langchain_core.messages import AIMessageChunk, BaseMessage, BaseMessageChunk
from langchain_core.outputs import ChatGenerationChunk
from langchain_openai import ChatOpenAI
from langchain_openai.chat_models import base as stock_openai

STREAM_ERROR = "An error occurred during streaming"


class StreamStalled(TimeoutError):
    """No chunk arrived within the model's `stream_chunk_timeout`."""


def _stream_error(payload: Any, request: Any) -> openai.APIError | None:
    """The error an event reports (`{"error": {...}}`), as the SDK would raise it."""
    if not isinstance(payload, dict) or not payload.get("error"):
        return None
    error = payload["error"]
    message = error.get("message") if isinstance(error, dict) else None
    if not isinstance(message, str) or not message:
        message = STREAM_ERROR
    return openai.APIError(message=message, request=request, body=error)


async def sse_payloads(
    lines: AsyncIterator[str],
) -> AsyncGenerator[tuple[str | None, str], None]:
    """(event name, data) of each server-sent event; comments and ids are skipped."""
    event: str | None = None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield event, "\n".join(data)
            event, data = None, []
        elif line.startswith("data:"):
            data.append(line[6:] if line.startswith("data: ") else line[5:])
        elif line.startswith("event:"):
            event = line[6:].strip()
    if data:
        yield event, "\n".join(data)


# Arguments of the SDK's `create` that are options of the call, not the request's JSON.
CALL_OPTIONS = frozenset({"extra_headers", "extra_query", "timeout"})


def untransformed(payload: dict[str, Any]) -> dict[str, Any]:
    """`create()`'s arguments for a request payload that is plain JSON already.

    The SDK walks every argument of `create` against its typed parameter schema
    before sending it (`openai._utils._transform`); for the messages of a long
    conversation that walk cost about 0.4 ms of CPU per message, on every turn. The
    payload langchain-openai builds is JSON already, so the body goes as `extra_body`,
    which the SDK merges into the request as it is (its keys win over the arguments);
    only `model`, `messages` (empty, overridden) and `stream` are walked."""
    body = {k: v for k, v in payload.items() if k not in CALL_OPTIONS and k != "extra_body"}
    body.update(payload.get("extra_body") or {})
    options = {k: v for k, v in payload.items() if k in CALL_OPTIONS}
    return {
        "model": payload["model"],
        "messages": [],
        "stream": bool(payload.get("stream")),
        "extra_body": body,
        **options,
    }


class LeanChatOpenAI(ChatOpenAI):
    """`ChatOpenAI` whose Chat Completions stream is read without the SDK's models."""

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        lean = {k: v for k, v in kwargs.items() if k != "stream_usage"}
        stream_usage = self._should_stream_usage(kwargs.get("stream_usage"), **lean)
        lean["stream"] = True
        if stream_usage:
            lean["stream_options"] = {"include_usage": stream_usage}
        payload = self._get_request_payload(messages, stop=stop, **lean)
        stock = (
            self._use_responses_api({**kwargs, **self.model_kwargs})
            or self.include_response_headers
            or self._uses_gateway
            or "response_format" in payload
        )
        if stock:
            async for chunk in super()._astream(messages, stop, run_manager, **kwargs):
                yield chunk
            return
        chunk_class: type[BaseMessageChunk] = AIMessageChunk
        try:
            async with self.async_client.with_streaming_response.create(
                **untransformed(payload)
            ) as response:
                async for data in self._chunks(response):
                    generation = self._convert_chunk_to_generation_chunk(data, chunk_class, {})
                    if generation is None:
                        continue
                    chunk_class = generation.message.__class__
                    if run_manager:
                        logprobs = (generation.generation_info or {}).get("logprobs")
                        await run_manager.on_llm_new_token(
                            generation.text, chunk=generation, logprobs=logprobs
                        )
                    yield generation
        except openai.APIError as exc:
            # The same translation as the stock path (a clearer message for some).
            if isinstance(exc, openai.BadRequestError):
                stock_openai._handle_openai_bad_request(exc)
            stock_openai._handle_openai_api_error(exc)
            raise

    async def _chunks(self, response: Any) -> AsyncIterator[dict[str, Any]]:
        """The stream's JSON chunks until `[DONE]`; an error event raises `APIError`,
        a transport failure `APIConnectionError`, and a gap longer than
        `stream_chunk_timeout` between chunks `StreamStalled`."""
        request = response.http_request
        limit = self.stream_chunk_timeout if self.stream_chunk_timeout else None
        loop = asyncio.get_running_loop()
        events = sse_payloads(response.iter_lines())
        try:
            async with asyncio.timeout(None) as deadline:
                while True:
                    if limit is not None:
                        deadline.reschedule(loop.time() + limit)
                    try:
                        _event, data = await anext(events)
                    except StopAsyncIteration:
                        return
                    if data.startswith("[DONE]"):
                        # Read the body to its end, so the connection can be reused.
                        async for _ in events:
                            pass
                        return
                    # The consumer's time between chunks is not the model's.
                    deadline.reschedule(None)
                    payload = json.loads(data)
                    if error := _stream_error(payload, request):
                        raise error
                    yield payload
        except TimeoutError as exc:
            raise StreamStalled(
                f"the model sent nothing for {limit:g} s (stream_chunk_timeout)"
            ) from exc
        except (openai.APIError, json.JSONDecodeError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise openai.APIConnectionError(request=request) from exc
        finally:
            await events.aclose()
