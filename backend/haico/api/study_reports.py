"""REST: the researcher's reading of a study (the participants table, the metrics per
condition, the study's analysis CSV and its live event stream)."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from fastapi.sse import EventSourceResponse, ServerSentEvent

from haico.api import sse
from haico.api.deps import Caller, HandlesDep, StudyId
from haico.api.errors import responses
from haico.errors import DomainError
from haico.schemas.study_reports import ParticipantRow, StudyMetrics
from haico.services.access.principal import Principal
from haico.services.studies import reports, study_events

router = APIRouter(prefix="/api/studies/{study_id}", tags=["studies"])

CSV = "text/csv; charset=utf-8"


@router.get("/participants", responses=responses(403, 404))
async def list_participants(
    study_id: StudyId, handles: HandlesDep, caller: Caller
) -> list[ParticipantRow]:
    """Every participant in join order: condition, state, and what it did."""
    return await reports.participants(handles.db, principal=caller, study_id=study_id)


@router.get("/metrics", responses=responses(403, 404))
async def study_metrics(study_id: StudyId, handles: HandlesDep, caller: Caller) -> StudyMetrics:
    """Mean and median of each count per condition."""
    return await reports.study_metrics(handles.db, principal=caller, study_id=study_id)


@router.get(
    "/export.csv",
    responses={**responses(403, 404, stream=True), 200: {"content": {CSV: {}}}},
    response_class=StreamingResponse,
)
async def export_study_csv(
    study_id: StudyId, handles: HandlesDep, caller: Caller
) -> StreamingResponse:
    """Every node of every participant's family as a CSV row, `participant` and
    `condition` first (see docs/studies.md)."""
    families = await reports.export_families(handles.db, principal=caller, study_id=study_id)
    return StreamingResponse(
        reports.stream_csv(handles.db, families),
        media_type=CSV,
        headers={"Content-Disposition": f'attachment; filename="haico-{study_id}.csv"'},
    )


async def stream_start(
    study_id: StudyId, handles: HandlesDep, caller: Caller, after: sse.ResumePoint
) -> tuple[study_events.StudyStream, Principal]:
    """Where the follower starts; resolved before streaming, so errors keep their status."""
    start = await study_events.open_stream(
        handles.db, principal=caller, study_id=study_id, after=after
    )
    return start, caller


@router.get(
    "/events",
    response_class=EventSourceResponse,
    responses=responses(403, 404, 429, stream=True),
    dependencies=[Depends(sse.stream_slot)],
)
async def study_stream(
    started: Annotated[tuple[study_events.StudyStream, Principal], Depends(stream_start)],
    handles: HandlesDep,
    request: Request,
) -> AsyncIterator[ServerSentEvent]:
    """The study's joins, consents and finishes and every turn action of its families
    after `after` (or `Last-Event-ID`), in serverSeq order; `event: action`,
    `id: <serverSeq>`. A member's stream ends (an `event: error` first) within seconds
    of being removed from the study."""
    start, caller = started

    async def allowed() -> DomainError | None:
        return await study_events.still_allowed(
            handles.db, principal=caller, study_id=start.study_id
        )

    entries = study_events.follow(
        handles.db, handles.bus, start, limit=handles.settings.sse_queue_size
    )
    recheck = sse.Recheck(study_events.RECHECK_SECONDS, allowed) if start.member else None
    followed = sse.follow(request, handles, caller, entries, start, recheck)
    async with contextlib.aclosing(followed):  # its subscription ends with the response
        async for event in followed:
            yield event
