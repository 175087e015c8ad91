"""REST: turns (SSE), cancel, and the transcript."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query
from fastapi.sse import EventSourceResponse, ServerSentEvent

from app.api.deps import CurrentUser, HandlesDep, ThreadId
from app.api.errors import responses
from app.errors import Forbidden
from app.schemas import MessageOut, TurnIn
from app.services import turn_views
from app.services.running_turn import RunningTurn

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["turns"])


async def started_turn(
    thread_id: ThreadId,
    body: TurnIn,
    user: CurrentUser,
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
    if create and user.link_root is not None:
        # (a link owns nothing, so it cannot own a new conversation either)
        raise Forbidden("a share link cannot create a conversation")
    return await handles.turns.start_turn(
        user_id=user.id,
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
async def cancel_turn(
    thread_id: ThreadId, user: CurrentUser, handles: HandlesDep
) -> dict[str, Any]:
    return await handles.turns.cancel(user_id=user.id, thread_id=thread_id)


@router.get("/messages", responses=responses(403, 404))
async def get_messages(
    thread_id: ThreadId, user: CurrentUser, handles: HandlesDep
) -> list[MessageOut]:
    return [
        MessageOut(role=m.role, content=m.content, turn_index=m.turn_index, **m.extra)
        for m in await turn_views.transcript(
            handles.turns.db, handles.turns.runtime, user_id=user.id, thread_id=thread_id
        )
    ]
