"""REST: branch and fork."""

from __future__ import annotations

from fastapi import APIRouter, Request, status

from app.agent.runtime import AgentRuntime
from app.api.deps import CurrentUser, DbDep
from app.schemas import BranchIn, ConversationOut, ForkIn
from app.services import branching

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["branching"])


def _runtime(request: Request) -> AgentRuntime:
    runtime: AgentRuntime = request.app.state.runtime
    return runtime


@router.post("/branch", status_code=status.HTTP_201_CREATED)
async def create_branch(
    thread_id: str, body: BranchIn, request: Request, db: DbDep, user: CurrentUser
) -> ConversationOut:
    return await branching.create_branch(
        db,
        _runtime(request),
        user_id=user.id,
        thread_id=thread_id,
        from_turn=body.from_turn,
        reason=body.reason,
        override=body.workspace,
    )


@router.post("/fork", status_code=status.HTTP_201_CREATED)
async def create_fork(
    thread_id: str, body: ForkIn, request: Request, db: DbDep, user: CurrentUser
) -> ConversationOut:
    return await branching.create_fork(
        db, _runtime(request), user_id=user.id, thread_id=thread_id, from_turn=body.from_turn
    )
