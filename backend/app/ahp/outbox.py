"""What bounds one connection: its outgoing queue and its request rate.

Everything a connection sends goes through `Outbox`, a bounded queue drained by one
sender task. A client that stops reading blocks only its own sender; its queue fills
and the connection is closed with `SLOW_CONSUMER` (4008) instead of holding memory
or slowing the fan-out to everyone else. The client can `reconnect` and catch up from
the action log. `RateLimit` is a token bucket (burst of two seconds' worth).
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from typing import Any

from starlette.websockets import WebSocket

from app.ahp.protocol import SLOW_CONSUMER, Json, RpcError

log = logging.getLogger("haico.ahp")


class Outbox:
    def __init__(self, ws: WebSocket, size: int) -> None:
        self.ws = ws
        self.queue: asyncio.Queue[str | None] = asyncio.Queue(size)
        self.closed = asyncio.Event()
        self.close_code = 1000
        self.name = "?"

    def send(self, message: Json | str) -> None:
        if self.closed.is_set():
            return
        text = message if isinstance(message, str) else json.dumps(message)
        try:
            self.queue.put_nowait(text)
        except asyncio.QueueFull:
            log.warning("AHP client %s is not reading; closing it", self.name)
            self.shutdown(SLOW_CONSUMER)

    def shutdown(self, code: int) -> None:
        """Ask for the connection to close with `code` (the first reason wins)."""
        if not self.closed.is_set():
            self.close_code = code
            self.closed.set()

    def reply(self, msg_id: Any, result: Any) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "result": result})

    def error(self, msg_id: Any, err: RpcError) -> None:
        body: Json = {"code": err.code, "message": err.message}
        if err.data is not None:
            body["data"] = err.data
        self.send({"jsonrpc": "2.0", "id": msg_id, "error": body})

    def finish(self) -> None:
        """Let the sender stop after what is queued (a close the host asked for)."""
        self.queue.put_nowait(None)

    async def sender(self) -> None:
        while True:
            text = await self.queue.get()
            if text is None:
                return
            await self.ws.send_text(text)


class RateLimit:
    def __init__(self, per_second: float) -> None:
        self.rate = per_second
        self.capacity = 2 * per_second
        self.tokens = self.capacity
        self.at = time.monotonic()

    def allow(self) -> bool:
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
