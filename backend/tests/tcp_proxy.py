"""A TCP proxy the test controls, standing between a server process and PostgreSQL.

The machine's PostgreSQL is shared, so a test cannot stop it; it points the server at
this proxy instead and cuts the line: `cut()` resets every open connection and every
new one (the database "went away"), `restore()` forwards again.
"""

from __future__ import annotations

import asyncio
import contextlib


class TcpProxy:
    def __init__(self, upstream_host: str = "127.0.0.1", upstream_port: int = 5432) -> None:
        self.upstream = (upstream_host, upstream_port)
        self.port = 0
        self.cut_off = False
        self.refused = 0
        self._server: asyncio.Server | None = None
        self._open: set[asyncio.StreamWriter] = set()
        self._tasks: set[asyncio.Task[None]] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def stop(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()

    def cut(self) -> None:
        """Reset every open connection; new ones are closed as soon as they arrive."""
        self.cut_off = True
        for writer in list(self._open):
            _reset(writer)
        self._open.clear()

    def restore(self) -> None:
        self.cut_off = False

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self.cut_off:
            self.refused += 1
            _reset(writer)
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(*self.upstream)
        except OSError:
            _reset(writer)
            return
        self._open.update((writer, up_writer))
        for src, dst in ((reader, up_writer), (up_reader, writer)):
            task = asyncio.create_task(self._pipe(src, dst))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _pipe(self, src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(65536):
                dst.write(data)
                await dst.drain()
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            self._open.discard(dst)
            with contextlib.suppress(Exception):
                dst.close()


def _reset(writer: asyncio.StreamWriter) -> None:
    """Close with a TCP reset rather than a clean shutdown, as a dead peer would."""
    transport = writer.transport
    sock = transport.get_extra_info("socket")
    if sock is not None:
        import socket
        import struct

        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    transport.abort()
