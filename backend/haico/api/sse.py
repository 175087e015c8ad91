"""What the two live event streams share (a family's `…/events`, a study's `…/events`):
a stream slot per response, and the loop that follows a log of actions as SSE.

The loop sends a resync envelope first when the follower's gap is gone from the log,
then each entry the follower may see (`event: action`, `id: <serverSeq>`), a keep-alive
comment after `KEEPALIVE_SECONDS` of silence, and ends:
- with `event: error` when a re-check says the caller may no longer read (a grantee's
  or a member's stream is checked every few seconds);
- with the `SLOW_READER` comment when the follower fell too far behind;
- quietly when the followed log ends (the server is stopping).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Protocol

from fastapi import Depends, Header, Query, Request
from fastapi.sse import ServerSentEvent

from haico.api.deps import MAX_ID, Caller, HandlesDep
from haico.domain import LoggedAction
from haico.errors import DomainError
from haico.events import log as action_log
from haico.events.bus import Overflowed
from haico.process.sockets import cap_send_buffer
from haico.services.access.principal import Principal
from haico.services.coding.blind import Gate, visible_to
from haico.wiring.handles import Handles

# Seconds of silence before a keep-alive comment, below FastAPI's own 15 s ping and
# the idle timeouts of common proxies. Tests shrink it.
KEEPALIVE_SECONDS = 10.0
# The last line a follower that fell too far behind receives (`HAICO_SSE_QUEUE_SIZE`).
SLOW_READER = "too far behind: reconnect with Last-Event-ID"


async def stream_slot(caller: Caller, handles: HandlesDep) -> AsyncIterator[None]:
    """One of the caller's stream slots for as long as the response lasts (given back
    after its last byte, or when the client goes away): over the limit → 429
    `too_many_streams`, answered before the stream starts."""
    handles.streams.take(caller.id)
    try:
        yield
    finally:
        handles.streams.give_back(caller.id)


def resume_point(
    after: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
    last_event_id: Annotated[int | None, Header(alias="Last-Event-ID", ge=0, le=MAX_ID)] = None,
) -> int:
    """The serverSeq a follower resumes after: a reconnecting EventSource says where it
    stopped (`Last-Event-ID`), which wins over the URL's `after`."""
    return last_event_id if last_event_id is not None else after


ResumePoint = Annotated[int, Depends(resume_point)]


class Start(Protocol):
    """Where a follower starts: after serverSeq `after`, with `resync` (the envelope
    to send first) when the gap is gone from the log."""

    @property
    def after(self) -> int: ...

    @property
    def resync(self) -> dict[str, Any] | None: ...


@dataclass(frozen=True)
class Recheck:
    """How often, and how, a stream asks again whether its caller may still read:
    `allowed` answers None while it may, else the reason it may not."""

    seconds: float
    allowed: Callable[[], Awaitable[DomainError | None]]


async def follow(
    request: Request,
    handles: Handles,
    caller: Principal,
    entries: AsyncGenerator[LoggedAction, None],
    start: Start,
    recheck: Recheck | None,
) -> AsyncGenerator[ServerSentEvent, None]:
    """`entries` (a lazily started log follower) as server-sent events, from `start`;
    `recheck`, None for a caller whose access cannot end mid-stream (the owner)."""
    blind = Gate(caller)
    loop = asyncio.get_running_loop()
    wait = min(KEEPALIVE_SECONDS, recheck.seconds) if recheck else None
    checked = loop.time()
    # A follower that stops reading holds a small kernel buffer, and its own limit
    # (`HAICO_SSE_QUEUE_SIZE`) is reached that much sooner.
    cap_send_buffer(request)
    if start.resync is not None:
        yield ServerSentEvent(event="action", data=start.resync, id=str(start.after))
    pending: asyncio.Task[LoggedAction] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(entries.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=wait or KEEPALIVE_SECONDS)
            if recheck and loop.time() - checked >= (wait or 0):
                checked = loop.time()
                ended = await recheck.allowed()
                if ended is not None:
                    data = {"code": ended.code, "message": ended.message}
                    yield ServerSentEvent(event="error", data=data)
                    return
            if not done:
                yield ServerSentEvent(comment="keepalive")
                continue
            try:
                entry = pending.result()
            except Overflowed:
                # The client reads more slowly than its log grows: its stream ends
                # here, and its EventSource comes back with the last id it read.
                pending = None
                yield ServerSentEvent(comment=SLOW_READER)
                return
            except StopAsyncIteration:
                pending = None
                return
            pending = None
            if not await visible_to(
                handles.db, blind, root_thread_id=entry.root_thread_id, action=entry.action
            ):
                continue  # someone else's coding while the follower codes blind
            yield ServerSentEvent(
                event="action", data=action_log.envelope(entry), id=str(entry.seq)
            )
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        await entries.aclose()
