"""REST: research features (compare two nodes, search, export and import)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request, status

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.common import NO_NUL
from haico.schemas.compare import Comparison
from haico.schemas.conversations import ConversationOut
from haico.schemas.export import FamilyExport
from haico.schemas.trees import SearchOut
from haico.services.compare import nodes as compare_service
from haico.services.search import service as search_service
from haico.services.transfer import export as family_export
from haico.services.transfer import importing as family_import

router = APIRouter(prefix="/api", tags=["research"])

NodeParam = Annotated[str, Query(min_length=1, max_length=80, pattern=NO_NUL)]


@router.get("/conversations/{thread_id}/compare", responses=responses(403, 404, 409))
async def compare_nodes(
    thread_id: ThreadId, a: NodeParam, b: NodeParam, handles: HandlesDep, caller: Caller
) -> Comparison:
    """The workspace at node `b` against node `a` (any two nodes the caller owns)."""
    return await compare_service.compare(
        handles.db, principal=caller, thread_id=thread_id, a=a, b=b
    )


@router.get("/search", responses=responses())
async def search(
    q: Annotated[str, Query(min_length=1, max_length=500, pattern=NO_NUL)],
    handles: HandlesDep,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=100)] = 20,
    shared: bool = False,
) -> SearchOut:
    """The caller's nodes (every branch; drafts and deleted threads aside) whose user
    message, reply or document, or whose branch's name or summary (`kind: "branch"`,
    the branch's latest node), holds every term of `q` as whole words: words and
    "quoted phrases", `-word` excludes. Branches rank first, then the user's messages,
    replies and documents; each snippet is centred on the match. `shared=true` also
    searches the families others shared with the caller."""
    return await search_service.search(
        handles.db, principal=caller, query=q, limit=limit, shared=shared
    )


@router.get("/conversations/{thread_id}/export", responses=responses(403, 404))
async def export_family(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> FamilyExport:
    """The whole family of the thread as one versioned JSON document."""
    return await family_export.export_family(
        handles.db, handles.runtime, principal=caller, thread_id=thread_id
    )


# The body is a `FamilyExport`, read by the service off the event loop (a large one
# takes a while to parse): declared here for the document, not parsed by FastAPI.
IMPORT_BODY: dict[str, Any] = {
    "requestBody": {
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/FamilyExport"}}},
        "required": True,
    }
}


@router.post(
    "/conversations/import",
    status_code=status.HTTP_201_CREATED,
    responses=responses(413, 502),
    openapi_extra=IMPORT_BODY,
)
async def import_family(request: Request, handles: HandlesDep, caller: Caller) -> ConversationOut:
    """Recreate an exported family as a new family of the caller (its new root). An
    invalid document or a newer format version answers 422 and creates nothing."""
    body = await request.body()
    return await family_import.import_body(handles.db, handles.runtime, principal=caller, body=body)
