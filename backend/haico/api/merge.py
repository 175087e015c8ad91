"""REST: bring a path back (merge and pick)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, status
from fastapi.responses import JSONResponse

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.common import MAX_INT
from haico.schemas.merge import MergeIn, MergeOut, MergePlan, RevertIn, RevertOut
from haico.services.merge import revert as revert_service
from haico.services.merge import service as merge_service

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["merge"])


@router.post(
    "/merge",
    status_code=status.HTTP_201_CREATED,
    response_model=MergeOut,
    responses={
        **responses(403, 404, 409, 413, 502),
        200: {"model": MergePlan, "description": "The plan (`preview: true`); nothing written"},
    },
)
async def merge(
    thread_id: ThreadId, body: MergeIn, handles: HandlesDep, caller: Caller
) -> MergeOut | JSONResponse:
    """Bring `source`'s work into this thread's workspace as one new node: `pick` the
    change that node made, or `merge` what its path changed since the newest node it
    shares with this thread. `preview: true` answers the plan (200) and writes nothing.
    409 `merge_conflict` (with `data.plan`) while a conflict has no resolution, 422
    `nothing_to_merge` when this thread already has everything, 409 `conflict` on a
    stale `expected_head_turn_id`, 409 `turn_in_progress` during a turn, 409
    `checkout_would_discard_changes` unless `force`."""
    if body.preview:
        plan = await merge_service.preview(
            handles.db, principal=caller, thread_id=thread_id, body=body
        )
        return JSONResponse(plan.model_dump(mode="json"), status_code=status.HTTP_200_OK)
    expected = (
        body.expected_head_turn_id
        if "expected_head_turn_id" in body.model_fields_set
        else merge_service.UNSET
    )
    return await merge_service.merge(
        handles.db,
        handles.runtime,
        principal=caller,
        thread_id=thread_id,
        body=body,
        expected_head_turn_id=expected,
        retains=handles.settings.history_retains_branches,
        vectors=handles.turns.vectors,
    )


@router.post(
    "/merge/{k}/revert",
    status_code=status.HTTP_201_CREATED,
    response_model=RevertOut,
    responses=responses(403, 404, 409),
)
async def revert_merge(
    thread_id: ThreadId,
    k: Annotated[int, Path(ge=0, le=MAX_INT)],
    handles: HandlesDep,
    caller: Caller,
    body: RevertIn | None = None,
) -> RevertOut:
    """Undo the bring-in that made step `k` of this thread: a new step whose workspace
    is the one before it (artifacts it copied stay); the merge step stays in the
    history and the head moves onto the new step. Only while step `k` is the head of
    its family and this thread's newest step (409 `conflict`, naming the steps, when
    not); 422 when step `k` is no bring-in; 409 `turn_in_progress` during a turn."""
    expected = (
        body.expected_head_turn_id
        if body is not None and "expected_head_turn_id" in body.model_fields_set
        else revert_service.UNSET
    )
    return await revert_service.revert(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        turn=k,
        expected_head_turn_id=expected,
        vectors=handles.turns.vectors,
    )
