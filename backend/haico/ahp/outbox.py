"""What bounds one connection: its outgoing queue (`Outbox`), and the frames and
request rate it accepts (`Intake`).

Everything a connection sends goes through `Outbox`, a queue drained by one sender
task. The queue is bounded twice: by messages (`HAICO_AHP_QUEUE_SIZE`) and by bytes
(`HAICO_AHP_QUEUE_BYTES`, counting the server's own write buffer for the socket). A
client that stops reading blocks only its own sender (the WebSocket layer awaits the
socket before writing more); its queue fills and the connection counts as a slow
consumer: the queue is dropped and the host closes with `SLOW_CONSUMER` (4008). The
client can `reconnect` and catch up from the action log.

Two things keep a stalled socket small and its detection prompt, when the server is
uvicorn (found through the ASGI `send` callable; with another server only the queue
limits apply): the kernel's send buffer of the socket is capped (`haico.process.sockets`, so a
stalled client holds at most that much kernel memory instead of the autotuned
megabytes), and a close that cannot be written within `CLOSE_GRACE` seconds (the
client still reads nothing) aborts the TCP connection, so no descriptor is kept open.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any

from starlette.websockets import WebSocket

from haico.ahp.protocol import SLOW_CONSUMER, Json, RpcError
from haico.process.sockets import cap_send_buffer

log = logging.getLogger("haico.ahp")

CLOSE_GRACE = 10.0  # seconds a slow consumer has to read up to its close frame


class Outbox:
    def __init__(self, ws: WebSocket, size: int, max_bytes: int) -> None:
        self.ws = ws
        self.queue: asyncio.Queue[str | None] = asyncio.Queue()
        self.size = size
        self.max_bytes = max_bytes
        self.queued_bytes = 0
        self.closed = asyncio.Event()
        self.close_code = 1000
        self.name = "?"
        self.transport = cap_send_buffer(ws)

    def pending_bytes(self) -> int:
        """Bytes waiting for this client in the process: the queue and the write buffer."""
        buffered = self.transport.get_write_buffer_size() if self.transport else 0
        return self.queued_bytes + buffered

    def send(self, message: Json | str) -> None:
        if self.closed.is_set():
            return
        text = message if isinstance(message, str) else json.dumps(message)
        waiting = self.queue.qsize()
        # One message is always accepted, however big (a large snapshot to a client
        # that reads); behind it, the limits count.
        if waiting and (waiting >= self.size or self.pending_bytes() + len(text) > self.max_bytes):
            log.warning(
                "AHP client %s is not reading (%d messages, %d bytes waiting); closing it",
                self.name,
                waiting,
                self.pending_bytes(),
            )
            self.shutdown(SLOW_CONSUMER)
            return
        self.queue.put_nowait(text)
        self.queued_bytes += len(text)

    def shutdown(self, code: int) -> None:
        """Ask for the connection to close with `code` (the first reason wins)."""
        if not self.closed.is_set():
            self.close_code = code
            self.closed.set()
            if code == SLOW_CONSUMER:
                self.drop()

    def drop(self) -> None:
        """Forget what is queued (a slow consumer gets nothing more but the close)."""
        while not self.queue.empty():
            self.queue.get_nowait()
        self.queued_bytes = 0

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
            self.queued_bytes -= len(text)
            await self.ws.send_text(text)

    async def close(self) -> None:
        """Send the close frame. A slow consumer gets `CLOSE_GRACE` seconds to read up
        to it; after that the TCP connection is aborted."""
        grace = CLOSE_GRACE if self.close_code == SLOW_CONSUMER else 1.0
        try:
            await asyncio.wait_for(self.ws.close(code=self.close_code), timeout=grace)
        except Exception:
            if self.close_code == SLOW_CONSUMER and self.transport is not None:
                log.warning("AHP client %s read nothing in %gs; aborting", self.name, grace)
                self.transport.abort()


class Intake:
    """The limits on what a client sends: the frame size (`HAICO_AHP_MAX_FRAME_BYTES`;
    a bigger frame closes the connection with 1009) and the request rate
    (`HAICO_AHP_REQUESTS_PER_SECOND`; the excess is answered -32000)."""

    def __init__(self, max_frame_bytes: int, per_second: float) -> None:
        self.max_frame_bytes = max_frame_bytes
        self.rate = RateLimit(per_second)

    def too_big(self, text: str) -> bool:
        # Cheap first: a UTF-8 encoding is at least as long as the text, at most 4x.
        if len(text) > self.max_frame_bytes:
            return True
        return len(text) * 4 > self.max_frame_bytes and len(text.encode()) > self.max_frame_bytes

    def allow(self) -> bool:
        return self.rate.allow()


class RateLimit:
    """A token bucket: `per_second` requests, with a burst of two seconds' worth."""

    def __init__(self, per_second: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = per_second
        self.capacity = 2 * per_second
        self.tokens = self.capacity
        self.clock = clock
        self.at = clock()

    def allow(self) -> bool:
        now = self.clock()
        self.tokens = min(self.capacity, self.tokens + (now - self.at) * self.rate)
        self.at = now
        if self.tokens < 1:
            return False
        self.tokens -= 1
        return True
