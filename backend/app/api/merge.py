"""REST: bring a path back (merge and pick)."""

from __future__ import annotations

from fastapi import APIRouter, status
from fastapi.responses import JSONResponse

from app.api.deps import CurrentUser, HandlesDep, ThreadId
from app.api.errors import responses
from app.schemas_merge import MergeIn, MergeOut, MergePlan
from app.services.merge import service as merge_service

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
    thread_id: ThreadId, body: MergeIn, handles: HandlesDep, user: CurrentUser
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
            handles.db, user_id=user.id, thread_id=thread_id, body=body
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
        user_id=user.id,
        thread_id=thread_id,
        body=body,
        expected_head_turn_id=expected,
        retains=handles.settings.history_retains_branches,
        vectors=handles.turns.vectors,
    )
