"""REST: turns (SSE), cancel, and the transcript."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.turns import MessageOut, TurnIn
from haico.services.turns import views as turn_views
from haico.services.turns.running import RunningTurn

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["turns"])


async def started_turn(
    thread_id: ThreadId,
    body: TurnIn,
    caller: Caller,
    handles: HandlesDep,
    force: Annotated[bool, Query()] = False,
    create: Annotated[
        bool,
        Query(
            description="create the conversation (a new root with this id) if it does "
            "not exist yet, together with its first turn: a send refused or failed "
            "before its turn started leaves no empty conversation"
        ),
    ] = False,
) -> RunningTurn:
    """Open the turn before streaming, so 404/409 and friends keep their status."""
    return await handles.turns.start_turn(
        principal=caller,
        thread_id=thread_id,
        content=body.content,
        force=force,
        profile_id=body.profile_id,
        create=create,
    )


@router.post(
    "/turns",
    response_class=EventSourceResponse,
    responses=responses(403, 404, 409, 413, 502, stream=True),
)
async def post_turn(
    turn: Annotated[RunningTurn, Depends(started_turn)],
) -> AsyncIterator[ServerSentEvent]:
    """turn_started, then token / tool_call / workspace_changed, then turn_completed or error."""
    async for event in turn.events():
        yield ServerSentEvent(event=event.name, data=event.data)


@router.post("/turns/cancel", responses=responses(403, 404, 409))
async def cancel_turn(thread_id: ThreadId, caller: Caller, handles: HandlesDep) -> dict[str, Any]:
    return await handles.turns.cancel(principal=caller, thread_id=thread_id)


@router.get("/messages", responses=responses(403, 404))
async def get_messages(
    thread_id: ThreadId, caller: Caller, handles: HandlesDep
) -> list[MessageOut]:
    return [
        MessageOut(role=m.role, content=m.content, turn_index=m.turn_index, **m.extra)
        for m in await turn_views.transcript(
            handles.turns.db, handles.turns.runtime, principal=caller, thread_id=thread_id
        )
    ]
