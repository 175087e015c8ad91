"""REST: turns (SSE), cancel, and the transcript."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field

from app.api.deps import CurrentUser
from app.api.sse import SSE_HEADERS, frame
from app.services.turns import MAX_MESSAGE_CHARS, RunningTurn, TurnManager

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["turns"])


def get_turns(request: Request) -> TurnManager:
    turns: TurnManager = request.app.state.turns
    return turns


TurnsDep = Annotated[TurnManager, Depends(get_turns)]


class TurnIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    content: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


class MessageOut(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: str
    content: str
    turn_index: int


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
