"""A client that hangs up mid-response is no error.

A stream (a turn's SSE, the event stream) ends when its client leaves; FastAPI's SSE
plumbing may then fail its own tasks with `anyio.BrokenResourceError` (a buffer
whose reader is gone), which would reach the catch-all handler and be logged as an
unexpected error. This middleware notes the client's `http.disconnect` and, when the
request then fails with nothing but such errors, logs one debug line instead. Nothing
is lost: a turn runs in its own task and is stored whether or not its sender reads.
"""

from __future__ import annotations

import logging

import anyio
from starlette.requests import ClientDisconnect

from haico.api.limits import ASGIApp, Message, Receive, Scope, Send

log = logging.getLogger("haico.api")

# What a response's machinery raises when its client is gone.
GONE_ERRORS: tuple[type[Exception], ...] = (
    anyio.BrokenResourceError,
    anyio.ClosedResourceError,
    ClientDisconnect,
    ConnectionError,
)


def only_gone_errors(exc: BaseException) -> bool:
    """`exc` is one of `GONE_ERRORS`, or a group holding nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        _, rest = exc.split(GONE_ERRORS)
        return rest is None
    return isinstance(exc, GONE_ERRORS)


class ClientGoneMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        gone = False

        async def watched() -> Message:
            nonlocal gone
            message = await receive()
            if message["type"] == "http.disconnect":
                gone = True
            return message

        try:
            await self.app(scope, watched, send)
        except Exception as exc:
            if not (gone and only_gone_errors(exc)):
                raise
            log.debug(
                "the client left %s %s mid-response", scope["method"], scope["path"], exc_info=exc
            )
