"""Request body limits, enforced before the app reads the body: its size, and text
that is not valid Unicode (a lone surrogate, which no column, log line or answer can
hold: 422 here rather than a 500 wherever it would first be encoded)."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from haico.domain import is_valid_text

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

IMPORT_PATH = "/api/conversations/import"
# A JSON body carries a surrogate only as a `\uD800`-`\uDFFF` escape or as its (invalid)
# UTF-8 bytes: only a body holding either is decoded to look closer. An import is
# checked by its own endpoint, off the event loop (`api.research`).
_MAYBE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]|\xed[\xa0-\xbf]")
INVALID_TEXT = "body: a text is not valid Unicode (a lone surrogate)"


def body_text_is_valid(body: bytes) -> bool:
    """False when `body` is JSON holding a string that is not valid Unicode."""
    if not _MAYBE_SURROGATE.search(body):
        return True
    try:
        value = json.loads(body)
    except ValueError:
        return True  # not JSON: the endpoint answers for it
    return is_valid_text(value)


class BodyLimitMiddleware:
    """Answers 413 when a request body exceeds its limit (import has its own), and 422
    when it holds text that is not valid Unicode."""

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
        if scope["path"] != IMPORT_PATH and not body_text_is_valid(b"".join(chunks)):
            await _answer(send, 422, "invalid_input", INVALID_TEXT)
            return
        await self.app(scope, _replay(chunks, None, receive), send)

    @staticmethod
    async def _reject(send: Send, limit: int) -> None:
        await _answer(send, 413, "payload_too_large", f"request body exceeds {limit} bytes")


async def _answer(send: Send, status: int, code: str, message: str) -> None:
    payload = json.dumps({"code": code, "message": message}).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
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
