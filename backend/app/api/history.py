"""REST: the family's history state, checkout, and the event stream."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from app.api.deps import BusDep, CurrentUser, DbDep, SettingsDep
from app.api.sse import SSE_HEADERS, frame
from app.db.models import ActionLogEntry
from app.events import log as action_log
from app.schemas import CheckoutIn, HistoryOut
from app.services import event_stream, history

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["history"])

KEEPALIVE_SECONDS = 15.0


@router.get("/history")
async def get_history(
    thread_id: str, db: DbDep, settings: SettingsDep, user: CurrentUser
) -> HistoryOut:
    return await history.get_history(
        db, user_id=user.id, thread_id=thread_id, retains=settings.history_retains_branches
    )


@router.post("/checkout")
async def checkout(
    thread_id: str, body: CheckoutIn, db: DbDep, settings: SettingsDep, user: CurrentUser
) -> HistoryOut:
    expected = (
        body.expected_head_turn_id
        if "expected_head_turn_id" in body.model_fields_set
        else history.UNSET
    )
    return await history.checkout(
        db,
        user_id=user.id,
        thread_id=thread_id,
        turn_id=body.turn_id,
        expected_head_turn_id=expected,
        force=body.force,
        retains=settings.history_retains_branches,
    )


@router.get("/events")
async def events(
    thread_id: str,
    db: DbDep,
    bus: BusDep,
    settings: SettingsDep,
    user: CurrentUser,
    after: Annotated[int, Query(ge=0)] = 0,
) -> StreamingResponse:
    """Every action of the thread's family after `after`, in serverSeq order (SSE)."""
    start = await event_stream.open_stream(
        db,
        user_id=user.id,
        thread_id=thread_id,
        after=after,
        retains=settings.history_retains_branches,
    )

    async def stream() -> AsyncIterator[bytes]:
        if start.snapshot is not None:
            payload = {"history": start.snapshot.model_dump(), "serverSeq": start.after}
            yield frame("snapshot", payload)
        entries = bus.stream(root_thread_ids={start.root_thread_id}, after=start.after)
        pending: asyncio.Task[ActionLogEntry] | None = None
        try:
            while True:
                if pending is None:
                    pending = asyncio.ensure_future(entries.__anext__())
                done, _ = await asyncio.wait({pending}, timeout=KEEPALIVE_SECONDS)
                if not done:
                    yield b": keepalive\n\n"
                    continue
                entry = pending.result()
                pending = None
                yield frame("action", action_log.envelope(entry), event_id=str(entry.seq))
        finally:
            if pending is not None:
                pending.cancel()
                with contextlib.suppress(BaseException):
                    await pending
            await entries.aclose()

    return StreamingResponse(stream(), media_type="text/event-stream", headers=SSE_HEADERS)
