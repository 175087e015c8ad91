"""REST: research features (compare two nodes, search, export and import)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, status

from app.api.deps import CurrentUser, HandlesDep, ThreadId
from app.api.errors import responses
from app.schemas import NO_NUL, Comparison, ConversationOut
from app.schemas_export import FamilyExport
from app.schemas_trees import SearchOut
from app.services import compare as compare_service
from app.services import family_export, family_import
from app.services import search as search_service

router = APIRouter(prefix="/api", tags=["research"])

NodeParam = Annotated[str, Query(min_length=1, max_length=80, pattern=NO_NUL)]


@router.get("/conversations/{thread_id}/compare", responses=responses(403, 404, 409))
async def compare_nodes(
    thread_id: ThreadId, a: NodeParam, b: NodeParam, handles: HandlesDep, user: CurrentUser
) -> Comparison:
    """The workspace at node `b` against node `a` (any two nodes the caller owns)."""
    return await compare_service.compare(handles.db, user_id=user.id, thread_id=thread_id, a=a, b=b)


@router.get("/search", responses=responses())
async def search(
    q: Annotated[str, Query(min_length=1, max_length=500, pattern=NO_NUL)],
    handles: HandlesDep,
    user: CurrentUser,
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
        handles.db, user_id=user.id, query=q, limit=limit, shared=shared
    )


@router.get("/conversations/{thread_id}/export", responses=responses(403, 404))
async def export_family(
    thread_id: ThreadId, handles: HandlesDep, user: CurrentUser
) -> FamilyExport:
    """The whole family of the thread as one versioned JSON document."""
    return await family_export.export_family(
        handles.db, handles.runtime, user_id=user.id, thread_id=thread_id
    )


@router.post(
    "/conversations/import",
    status_code=status.HTTP_201_CREATED,
    responses=responses(413, 502),
)
async def import_family(
    body: FamilyExport, handles: HandlesDep, user: CurrentUser
) -> ConversationOut:
    """Recreate an exported family as a new family of the caller (its new root). An
    invalid document or a newer format version answers 422 and creates nothing."""
    return await family_import.import_family(handles.db, handles.runtime, user_id=user.id, doc=body)
