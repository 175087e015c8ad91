"""REST: sharing a family (token mode only)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from haico.api.deps import Caller, HandlesDep, ShareId, ThreadId
from haico.api.errors import responses
from haico.errors import SharingNeedsTokenAuth
from haico.schemas.shares import ShareCreate, ShareOut
from haico.services.sharing import shares as service
from haico.wiring.handles import Handles

router = APIRouter(prefix="/api", tags=["sharing"])


def _needs_token_mode(handles: Handles) -> None:
    if handles.settings.auth != "token":
        raise SharingNeedsTokenAuth("sharing needs token auth (HAICO_AUTH=token)")


@router.post(
    "/conversations/{thread_id}/shares",
    status_code=status.HTTP_201_CREATED,
    responses=responses(400, 403, 404, 413),
)
async def create_share(
    thread_id: ThreadId, body: ShareCreate, handles: HandlesDep, caller: Caller
) -> ShareOut:
    """Share the thread's whole family: with `user`, grant that user the role; without,
    make a link whose `token` (shown only here) grants viewer or commenter. Owner only."""
    _needs_token_mode(handles)
    return await service.create(handles.db, principal=caller, thread_id=thread_id, body=body)


@router.get("/conversations/{thread_id}/shares", responses=responses(400, 403, 404))
async def list_shares(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> list[ShareOut]:
    """The family's shares, revoked ones included (never a token). Owner only."""
    _needs_token_mode(handles)
    return await service.list_for_family(handles.db, principal=caller, thread_id=thread_id)


@router.delete(
    "/shares/{share_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=responses(400, 403, 404),
)
async def revoke_share(share_id: ShareId, handles: HandlesDep, caller: Caller) -> Response:
    """Revoke a share: its next request is refused (401), open streams close. Owner only."""
    _needs_token_mode(handles)
    await service.revoke(handles.db, principal=caller, share_id=share_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
