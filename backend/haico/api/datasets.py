"""REST: a family's datasets (REFI-QDA `.qdpx`, tree and preference JSONL, Parquet).
Every route makes one service call; errors are answered before any byte is sent."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response

from haico.api.deps import Caller, HandlesDep, StudyId, ThreadId
from haico.api.errors import responses
from haico.services.datasets import exports
from haico.services.datasets.exports import JsonlFormat

router = APIRouter(prefix="/api", tags=["datasets"])

ZIP = "application/zip"
JSONL = "application/x-ndjson"
PARQUET = "application/vnd.apache.parquet"


def _answers(media_type: str) -> dict[int | str, dict[str, object]]:
    """The OpenAPI answers of a download: the file, or 403/404 before any byte."""
    return {**responses(403, 404), 200: {"content": {media_type: {}}}}


def _file(body: bytes, media_type: str, filename: str) -> Response:
    return Response(
        body,
        media_type=media_type,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get(
    "/conversations/{thread_id}/export.qdpx",
    responses=_answers(ZIP),
    response_class=Response,
)
async def family_qdpx(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> Response:
    """The family as a REFI-QDA project (ATLAS.ti, NVivo, MAXQDA, QualCoder)."""
    body = await exports.family_qdpx(handles.db, principal=caller, thread_id=thread_id)
    return _file(body, ZIP, f"haico-{thread_id}.qdpx")


@router.get(
    "/conversations/{thread_id}/export.jsonl",
    responses=_answers(JSONL),
    response_class=Response,
)
async def family_jsonl(
    thread_id: ThreadId,
    handles: HandlesDep,
    caller: Caller,
    format: Annotated[JsonlFormat, Query()] = "tree",
) -> Response:
    """`format=tree`: every message with its parent (OpenAssistant's tree shape);
    `format=preferences`: a line per judgment that prefers a side."""
    body = await exports.family_jsonl(
        handles.db, principal=caller, thread_id=thread_id, format=format
    )
    return _file(body, JSONL, f"haico-{thread_id}-{format}.jsonl")


@router.get(
    "/conversations/{thread_id}/export.parquet",
    responses=_answers(PARQUET),
    response_class=Response,
)
async def family_parquet(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> Response:
    """The analysis table (the CSV export's columns), typed."""
    body = await exports.family_parquet(handles.db, principal=caller, thread_id=thread_id)
    return _file(body, PARQUET, f"haico-{thread_id}.parquet")


@router.get(
    "/studies/{study_id}/export.qdpx",
    responses=_answers(ZIP),
    response_class=Response,
)
async def study_qdpx(study_id: StudyId, handles: HandlesDep, caller: Caller) -> Response:
    """Every participant's family: one Case per participant with a `condition`."""
    body = await exports.study_qdpx(handles.db, principal=caller, study_id=study_id)
    return _file(body, ZIP, f"haico-study-{study_id}.qdpx")


@router.get(
    "/studies/{study_id}/export.jsonl",
    responses=_answers(JSONL),
    response_class=Response,
)
async def study_jsonl(
    study_id: StudyId,
    handles: HandlesDep,
    caller: Caller,
    format: Annotated[JsonlFormat, Query()] = "tree",
) -> Response:
    """As a family's, each line with `participant` and `condition`."""
    body = await exports.study_jsonl(handles.db, principal=caller, study_id=study_id, format=format)
    return _file(body, JSONL, f"haico-study-{study_id}-{format}.jsonl")


@router.get(
    "/studies/{study_id}/export.parquet",
    responses=_answers(PARQUET),
    response_class=Response,
)
async def study_parquet(study_id: StudyId, handles: HandlesDep, caller: Caller) -> Response:
    """The analysis table of every participant's family, `participant` and
    `condition` first."""
    body = await exports.study_parquet(handles.db, principal=caller, study_id=study_id)
    return _file(body, PARQUET, f"haico-study-{study_id}.parquet")
