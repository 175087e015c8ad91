"""The asyncio transport under an ASGI connection, for the limits a client that stops
reading needs: a small kernel send buffer, and what the server itself still holds for
it.

Found through the ASGI `send` callable when the server exposes its protocol object
there (uvicorn does). Starlette wraps it in closures, and a middleware that rewrites
answers (the gzip one) in a bound method of an object keeping the `send` it wraps:
both are followed. With another server, or the in-process test client, there is none
and only the app's own queue limits apply.
"""

from __future__ import annotations

import contextlib
import socket
from typing import Any, Protocol

# SO_SNDBUF asked for a streaming socket (Linux doubles it): a client that stops
# reading holds that much kernel memory instead of the autotuned megabytes, and its
# stream's own limit is reached that much sooner.
SEND_BUFFER = 128 * 1024


class Transport(Protocol):
    def get_write_buffer_size(self) -> int: ...
    def get_extra_info(self, name: str, default: Any = None) -> Any: ...
    def abort(self) -> None: ...


def transport_of(connection: Any) -> Transport | None:
    """The asyncio transport under `connection` (a Starlette WebSocket or Request), when
    the server exposes it on the protocol object its ASGI `send` is bound to."""
    todo: list[Any] = [getattr(connection, "_send", None)]
    for _ in range(16):
        if not todo:
            return None
        fn = todo.pop()
        owner = getattr(fn, "__self__", None)
        transport = getattr(owner, "transport", None)
        if transport is not None and hasattr(transport, "get_write_buffer_size"):
            return transport  # type: ignore[no-any-return]
        wrapped = getattr(owner, "send", None)
        if callable(wrapped) and wrapped is not fn:
            todo.append(wrapped)
        for cell in getattr(fn, "__closure__", None) or ():
            with contextlib.suppress(ValueError):
                if callable(cell.cell_contents):
                    todo.append(cell.cell_contents)
    return None


def cap_send_buffer(connection: Any) -> Transport | None:
    """Give `connection`'s socket a `SEND_BUFFER` kernel send buffer; its transport."""
    transport = transport_of(connection)
    if transport is not None:
        sock = transport.get_extra_info("socket")
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SEND_BUFFER)
    return transport
