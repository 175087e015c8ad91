"""REST: the history graph of a conversation family."""

from __future__ import annotations

from fastapi import APIRouter

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.graph import GraphOut
from haico.services.history import graph as service

router = APIRouter(prefix="/api/conversations", tags=["graph"])


@router.get("/{thread_id}/graph", responses=responses(403, 404))
async def get_graph(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> GraphOut:
    return await service.build_graph(
        handles.db, principal=caller, thread_id=thread_id, node_cap=handles.settings.graph_node_cap
    )
