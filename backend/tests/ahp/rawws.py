"""A WebSocket client written directly on a TCP socket, for the slow-consumer tests.

Client libraries read their socket in the background (and answer pings), so a "client
that stops reading" built on one still drains the kernel buffer. This one does the
handshake and the framing by hand and touches the socket only when the test says so:
after `stop()`, the bytes the host sends pile up in a receive buffer made small on
purpose (`SO_RCVBUF`), exactly like a hung client.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import socket
import struct
from typing import Any

Json = dict[str, Any]


class RawWs:
    def __init__(self, sock: socket.socket, rest: bytes) -> None:
        self.sock = sock
        self.buf = bytearray(rest)
        self.loop = asyncio.get_running_loop()
        self.next_id = 0
        self.received_bytes = len(rest)
        self.close_code: int | None = None

    @classmethod
    async def open(cls, base_url: str, *, rcvbuf: int = 4096) -> RawWs:
        host, port = base_url.removeprefix("http://").split(":")
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        # Set before connecting, so the window the host sees is small from the start.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        sock.setblocking(False)
        loop = asyncio.get_running_loop()
        await loop.sock_connect(sock, (host, int(port)))
        key = base64.b64encode(os.urandom(16)).decode()
        request = (
            f"GET /ahp HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            "Sec-WebSocket-Version: 13\r\n\r\n"
        )
        await loop.sock_sendall(sock, request.encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = await loop.sock_recv(sock, 4096)
            assert chunk, "closed during the handshake"
            head += chunk
        status, rest = head.split(b"\r\n\r\n", 1)
        assert status.split(b"\r\n")[0].split(b" ")[1] == b"101", status
        return cls(sock, rest)

    # ---- writing ----

    async def send_text(self, text: str) -> None:
        payload = text.encode()
        mask = os.urandom(4)
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 1 << 16:
            header = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        await self.loop.sock_sendall(self.sock, header + mask + masked)

    async def call(self, method: str, params: Json) -> Json:
        """Send a request and read until its response (what comes before is dropped)."""
        self.next_id += 1
        msg_id = self.next_id
        await self.send_text(
            json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        )
        while True:
            opcode, payload = await self.frame()
            assert opcode == 1, (opcode, payload[:200])
            msg = json.loads(payload)
            if msg.get("id") == msg_id:
                assert "result" in msg, msg
                return dict(msg["result"])

    # ---- reading ----

    async def _fill(self, n: int) -> None:
        while len(self.buf) < n:
            chunk = await self.loop.sock_recv(self.sock, 65536)
            if not chunk:
                raise EOFError("the host closed the TCP connection")
            self.received_bytes += len(chunk)
            self.buf += chunk

    async def frame(self) -> tuple[int, bytes]:
        """The next frame from the host (unmasked): its opcode and payload."""
        await self._fill(2)
        b0, b1 = self.buf[0], self.buf[1]
        n, at = b1 & 0x7F, 2
        if n == 126:
            await self._fill(4)
            n, at = struct.unpack("!H", self.buf[2:4])[0], 4
        elif n == 127:
            await self._fill(10)
            n, at = struct.unpack("!Q", self.buf[2:10])[0], 10
        await self._fill(at + n)
        payload = bytes(self.buf[at : at + n])
        del self.buf[: at + n]
        assert b0 & 0x80, "fragmented frames are not expected from the host"
        return b0 & 0x0F, payload

    async def drain(self) -> list[Json]:
        """Read everything that is left: the messages, up to the host's close frame
        (whose code is kept in `close_code`) or the end of the stream."""
        messages: list[Json] = []
        while True:
            try:
                opcode, payload = await self.frame()
            except (EOFError, ConnectionError):
                return messages
            if opcode == 8:
                self.close_code = struct.unpack("!H", payload[:2])[0] if payload else 1005
                return messages
            if opcode == 1:
                messages.append(json.loads(payload))

    def close(self) -> None:
        self.sock.close()
