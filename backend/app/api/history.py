"""REST: the family's history state, checkout, and the event stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from app.api.deps import MAX_ID, CurrentUser, HandlesDep, ThreadId
from app.api.errors import responses
from app.domain import LoggedAction
from app.events import log as action_log
from app.events.bus import Overflowed
from app.schemas import CheckoutIn, HistoryOut
from app.services import event_stream, history, turn_views
from app.sockets import cap_send_buffer

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["history"])

# Seconds of silence before a keep-alive comment, below FastAPI's own 15 s ping and
# the idle timeouts of common proxies. Tests shrink it.
KEEPALIVE_SECONDS = 10.0
# The last line a follower that fell too far behind receives (`HAICO_SSE_QUEUE_SIZE`).
SLOW_READER = "too far behind: reconnect with Last-Event-ID"


# On GET …/history: the newest serverSeq before the history was read. A follower that
# opens `…/events?after=` there misses nothing, and replays nothing the history shows.
SERVER_SEQ_HEADER = "X-Haico-Server-Seq"


@router.get("/history", responses=responses(403, 404, stream=True))
async def get_history(
    thread_id: ThreadId, handles: HandlesDep, user: CurrentUser, response: Response
) -> HistoryOut:
    # The log position first: an action committed after it is replayed to a follower
    # starting there; one committed before it is already in the history read next.
    seq = await turn_views.log_position(handles.db)
    out = await history.get_history(
        handles.db,
        user_id=user.id,
        thread_id=thread_id,
        retains=handles.settings.history_retains_branches,
    )
    response.headers[SERVER_SEQ_HEADER] = str(seq)
    return out


@router.post("/checkout", responses=responses(403, 404, 409, 413))
async def checkout(
    thread_id: ThreadId, body: CheckoutIn, handles: HandlesDep, user: CurrentUser
) -> HistoryOut:
    expected = (
        body.expected_head_turn_id
        if "expected_head_turn_id" in body.model_fields_set
        else history.UNSET
    )
    return await history.checkout(
        handles.db,
        user_id=user.id,
        thread_id=thread_id,
        turn_id=body.turn_id,
        expected_head_turn_id=expected,
        force=body.force,
        retains=handles.settings.history_retains_branches,
    )


async def stream_start(
    thread_id: ThreadId,
    handles: HandlesDep,
    user: CurrentUser,
    after: Annotated[int, Query(ge=0, le=MAX_ID)] = 0,
    last_event_id: Annotated[int | None, Header(alias="Last-Event-ID", ge=0, le=MAX_ID)] = None,
) -> tuple[event_stream.StreamStart, int, str]:
    """Where the follower starts (and who follows what); resolved before streaming,
    so errors keep their status."""
    return (
        await event_stream.open_stream(
            handles.db,
            user_id=user.id,
            thread_id=thread_id,
            # A reconnecting EventSource says where it stopped; that wins over the URL.
            after=last_event_id if last_event_id is not None else after,
            retains=handles.settings.history_retains_branches,
        ),
        user.id,
        thread_id,
    )


@router.get(
    "/events", response_class=EventSourceResponse, responses=responses(403, 404, stream=True)
)
async def events(
    started: Annotated[tuple[event_stream.StreamStart, int, str], Depends(stream_start)],
    handles: HandlesDep,
    request: Request,
) -> AsyncIterator[ServerSentEvent]:
    """Every action of the thread's family after `after` (or the `Last-Event-ID`
    header), in serverSeq order; `event: action`, `id: <serverSeq>`. A grantee's
    stream ends (an `event: error` first) within seconds of its share being revoked
    or expiring."""
    start, user_id, thread_id = started
    wait = min(KEEPALIVE_SECONDS, event_stream.RECHECK_SECONDS) if start.grantee else None
    checked = asyncio.get_running_loop().time()
    # A follower that stops reading holds a small kernel buffer, and its own limit
    # (`HAICO_SSE_QUEUE_SIZE`) is reached that much sooner.
    cap_send_buffer(request)
    if start.resync is not None:
        yield ServerSentEvent(event="action", data=start.resync, id=str(start.after))
    entries = handles.bus.stream(
        root_thread_ids={start.root_thread_id},
        after=start.after,
        limit=handles.settings.sse_queue_size,
    )
    pending: asyncio.Task[LoggedAction] | None = None
    try:
        while True:
            if pending is None:
                pending = asyncio.ensure_future(entries.__anext__())
            done, _ = await asyncio.wait({pending}, timeout=wait or KEEPALIVE_SECONDS)
            if start.grantee and asyncio.get_running_loop().time() - checked >= (wait or 0):
                checked = asyncio.get_running_loop().time()
                ended = await event_stream.still_allowed(
                    handles.db, user_id=user_id, thread_id=thread_id
                )
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
                # The client reads more slowly than its family changes: its stream
                # ends here, and its EventSource comes back with the last id it read.
                pending = None
                yield ServerSentEvent(comment=SLOW_READER)
                return
            pending = None
            yield ServerSentEvent(
                event="action", data=action_log.envelope(entry), id=str(entry.seq)
            )
    finally:
        if pending is not None:
            pending.cancel()
            with contextlib.suppress(BaseException):
                await pending
        await entries.aclose()
