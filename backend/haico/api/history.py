"""REST: the family's history state, checkout, and the event stream."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from haico.api import sse
from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.errors import DomainError
from haico.schemas.history import CheckoutIn, HistoryOut
from haico.services.access.principal import Principal
from haico.services.history import event_stream
from haico.services.history import state as history
from haico.services.turns import log_replay

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["history"])

# On GET …/history: the newest serverSeq before the history was read. A follower that
# opens `…/events?after=` there misses nothing, and replays nothing the history shows.
SERVER_SEQ_HEADER = "X-Haico-Server-Seq"


@router.get("/history", responses=responses(403, 404, stream=True))
async def get_history(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller, response: Response
) -> HistoryOut:
    # The log position first: an action committed after it is replayed to a follower
    # starting there; one committed before it is already in the history read next.
    seq = await log_replay.log_position(handles.db)
    out = await history.get_history(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        retains=handles.settings.history_retains_branches,
    )
    response.headers[SERVER_SEQ_HEADER] = str(seq)
    return out


@router.post("/checkout", responses=responses(403, 404, 409, 413))
async def checkout(
    thread_id: ThreadId, body: CheckoutIn, handles: HandlesDep, caller: Caller
) -> HistoryOut:
    expected = (
        body.expected_head_turn_id
        if "expected_head_turn_id" in body.model_fields_set
        else history.UNSET
    )
    return await history.checkout(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        turn_id=body.turn_id,
        expected_head_turn_id=expected,
        force=body.force,
        retains=handles.settings.history_retains_branches,
    )


async def stream_start(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller, after: sse.ResumePoint
) -> tuple[event_stream.StreamStart, Principal, str]:
    """Where the follower starts (and who follows what); resolved before streaming,
    so errors keep their status."""
    return (
        await event_stream.open_stream(
            handles.db,
            principal=caller,
            thread_id=thread_id,
            after=after,
            retains=handles.settings.history_retains_branches,
        ),
        caller,
        thread_id,
    )


@router.get(
    "/events",
    response_class=EventSourceResponse,
    responses=responses(403, 404, 429, stream=True),
    dependencies=[Depends(sse.stream_slot)],
)
async def events(
    started: Annotated[tuple[event_stream.StreamStart, Principal, str], Depends(stream_start)],
    handles: HandlesDep,
    request: Request,
) -> AsyncIterator[ServerSentEvent]:
    """Every action of the thread's family after `after` (or the `Last-Event-ID`
    header), in serverSeq order; `event: action`, `id: <serverSeq>`. A grantee's
    stream ends (an `event: error` first) within seconds of its share being revoked
    or expiring."""
    start, caller, thread_id = started

    async def allowed() -> DomainError | None:
        return await event_stream.still_allowed(handles.db, principal=caller, thread_id=thread_id)

    entries = handles.bus.stream(
        root_thread_ids={start.root_thread_id},
        after=start.after,
        limit=handles.settings.sse_queue_size,
    )
    recheck = sse.Recheck(event_stream.RECHECK_SECONDS, allowed) if start.grantee else None
    followed = sse.follow(request, handles, caller, entries, start, recheck)
    async with contextlib.aclosing(followed):  # its subscription ends with the response
        async for event in followed:
            yield event
