"""Request body size limits, enforced before the app reads the body."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

IMPORT_PATH = "/api/conversations/import"


class BodyLimitMiddleware:
    """Answers 413 when a request body exceeds its limit (import has its own)."""

    def __init__(self, app: ASGIApp, *, max_bytes: int, max_import_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_import_bytes = max_import_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.max_import_bytes if scope["path"] == IMPORT_PATH else self.max_bytes
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await self._reject(send, limit)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:
            message = await receive()
            if message["type"] != "http.request":
                # Disconnect before the body ended: let the app see it.
                chunks_msg = message
                await self.app(scope, _replay([], chunks_msg, receive), send)
                return
            body = message.get("body", b"")
            size += len(body)
            if size > limit:
                await self._reject(send, limit)
                return
            chunks.append(body)
            more = message.get("more_body", False)
        await self.app(scope, _replay(chunks, None, receive), send)

    @staticmethod
    async def _reject(send: Send, limit: int) -> None:
        payload = json.dumps(
            {"code": "payload_too_large", "message": f"request body exceeds {limit} bytes"}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(payload)).encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": payload})


def _replay(chunks: list[bytes], tail: Message | None, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            if tail is not None:
                return tail
            return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        return await receive()

    return replay
