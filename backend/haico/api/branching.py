"""REST: branch and fork."""

from __future__ import annotations

from fastapi import APIRouter, status

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.conversations import ConversationOut
from haico.schemas.history import BranchIn, ForkIn
from haico.services.history import branching

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["branching"])


@router.post(
    "/branch",
    status_code=status.HTTP_201_CREATED,
    responses=responses(400, 403, 404, 409, 413, 502),
)
async def create_branch(
    thread_id: ThreadId, body: BranchIn, handles: HandlesDep, caller: Caller
) -> ConversationOut:
    return await branching.create_branch(
        handles.db,
        handles.runtime,
        principal=caller,
        thread_id=thread_id,
        from_turn=body.from_turn,
        reason=body.reason,
        override=body.workspace,
    )


@router.post(
    "/fork", status_code=status.HTTP_201_CREATED, responses=responses(403, 404, 409, 413, 502)
)
async def create_fork(
    thread_id: ThreadId, body: ForkIn, handles: HandlesDep, caller: Caller
) -> ConversationOut:
    return await branching.create_fork(
        handles.db, handles.runtime, principal=caller, thread_id=thread_id, from_turn=body.from_turn
    )
