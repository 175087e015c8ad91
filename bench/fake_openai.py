"""A fake OpenAI-compatible chat server that streams at a fixed pace.

`python -m bench.fake_openai --port P [--tokens 200] [--rate 50]`: every
`POST /v1/chat/completions` (streaming) answers `--tokens` content chunks, one every
1/`--rate` seconds on an absolute schedule (no drift), then `[DONE]`. It runs in its
own process so that its pacing does not share an event loop with what it feeds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse


def make_app(tokens: int, rate: float) -> FastAPI:
    app = FastAPI()
    interval = 1.0 / rate

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        body = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 0,
            "model": "fake-paced",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }
        return f"data: {json.dumps(body)}\n\n".encode()

    @app.post("/v1/chat/completions")
    async def completions(request: Request) -> StreamingResponse:
        await request.body()

        async def stream() -> AsyncIterator[bytes]:
            loop = asyncio.get_running_loop()
            yield chunk({"role": "assistant", "content": ""})
            start = loop.time()
            for i in range(tokens):
                delay = start + (i + 1) * interval - loop.time()
                if delay > 0:
                    await asyncio.sleep(delay)
                yield chunk({"content": f"t{i} "})
            yield chunk({}, "stop")
            yield b"data: [DONE]\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")

    @app.get("/health")
    async def health() -> dict[str, bool]:
        return {"ok": True}

    return app


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--tokens", type=int, default=200)
    parser.add_argument("--rate", type=float, default=50.0)
    args = parser.parse_args()
    uvicorn.run(
        make_app(args.tokens, args.rate),
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        backlog=4096,
    )


if __name__ == "__main__":
    main()
