"""REST: the history graph of a conversation family."""

from __future__ import annotations

from fastapi import APIRouter

from app.api.deps import CurrentUser, HandlesDep, ThreadId
from app.api.errors import responses
from app.schemas import GraphOut
from app.services import graph as service

router = APIRouter(prefix="/api/conversations", tags=["graph"])


@router.get("/{thread_id}/graph", responses=responses(403, 404))
async def get_graph(thread_id: ThreadId, handles: HandlesDep, user: CurrentUser) -> GraphOut:
    return await service.build_graph(
        handles.db, user_id=user.id, thread_id=thread_id, node_cap=handles.settings.graph_node_cap
    )
