"""REST: turns (SSE), cancel, and the transcript."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from app.api.deps import CurrentUser, TurnsDep
from app.api.sse import SSE_HEADERS, frame
from app.schemas import MessageOut, TurnIn
from app.services.turns import RunningTurn

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["turns"])


async def _stream(turn: RunningTurn) -> AsyncIterator[bytes]:
    async for event in turn.events():
        yield frame(event.name, event.data)


@router.post("/turns")
async def post_turn(
    thread_id: str,
    body: TurnIn,
    user: CurrentUser,
    turns: TurnsDep,
    force: Annotated[bool, Query()] = False,
) -> StreamingResponse:
    turn = await turns.start_turn(
        user_id=user.id, thread_id=thread_id, content=body.content, force=force
    )
    return StreamingResponse(_stream(turn), media_type="text/event-stream", headers=SSE_HEADERS)


@router.post("/turns/cancel")
async def cancel_turn(thread_id: str, user: CurrentUser, turns: TurnsDep) -> dict[str, Any]:
    return await turns.cancel(user_id=user.id, thread_id=thread_id)


@router.get("/messages")
async def get_messages(thread_id: str, user: CurrentUser, turns: TurnsDep) -> list[MessageOut]:
    return [
        MessageOut(role=m.role, content=m.content, turn_index=m.turn_index, **m.extra)
        for m in await turns.messages(user_id=user.id, thread_id=thread_id)
    ]
