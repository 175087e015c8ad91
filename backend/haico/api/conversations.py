"""REST: conversations."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.conversations import ConversationCreate, ConversationOut, ConversationPatch
from haico.schemas.shares import SharedConversationOut
from haico.services.coding import reveal
from haico.services.families import conversations as service
from haico.services.history import state as history
from haico.services.profiles import service as profiles
from haico.services.sharing import shares

router = APIRouter(prefix="/api/conversations", tags=["conversations"])


@router.post("", status_code=status.HTTP_201_CREATED, responses=responses(409, 413))
async def create_conversation(
    body: ConversationCreate, handles: HandlesDep, caller: Caller
) -> ConversationOut:
    """A new conversation; without a title it is named after its objective, or else
    after its first message."""
    return await service.create(
        handles.db,
        principal=caller,
        title=body.title,
        objective=body.objective,
        thread_id=body.new_id,
    )


@router.get("", responses=responses())
async def list_conversations(
    handles: HandlesDep, caller: Caller, archived: bool = False, shared: bool = False
) -> list[SharedConversationOut | ConversationOut]:
    """The caller's threads; `archived=true` includes archived branches (and families).
    `shared=true`: instead, the threads of families others shared with the caller, each
    with the caller's `role` and the family's `owner`."""
    if shared:
        return list(await shares.shared_with(handles.db, principal=caller))
    return list(await service.list_for_user(handles.db, principal=caller, archived=archived))


@router.get("/{thread_id}", responses=responses(403, 404))
async def get_conversation(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller
) -> ConversationOut:
    """The thread; a study's family, read by the study's owner or a member, names its
    study and answers the study's reveal."""
    return await reveal.conversation(handles.db, principal=caller, thread_id=thread_id)


@router.patch("/{thread_id}", responses=responses(403, 404, 413))
async def rename_conversation(
    thread_id: ThreadId, body: ConversationPatch, handles: HandlesDep, caller: Caller
) -> ConversationOut:
    set_name = "name" in body.model_fields_set
    if body.reveal_codings is not None:
        revealed = await reveal.set_reveal(
            handles.db, principal=caller, thread_id=thread_id, reveal=body.reveal_codings
        )
        if body.title is None and not set_name and body.archived is None and not body.profile_id:
            return revealed
    if body.profile_id is not None:
        out = await profiles.set_branch_profile(
            handles.db,
            handles.settings,
            principal=caller,
            thread_id=thread_id,
            profile_id=body.profile_id,
        )
        if body.title is None and not set_name and body.archived is None:
            return out
    if body.archived is not None:
        archived = await service.set_archived(
            handles.db, principal=caller, thread_id=thread_id, archived=body.archived
        )
        if body.title is None and not set_name:
            return archived
    if body.title is None and not set_name:
        return await service.get(handles.db, principal=caller, thread_id=thread_id)
    return await service.rename(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        title=body.title,
        name=body.name,
        set_name=set_name,
    )


@router.delete(
    "/{thread_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(403, 404, 409)
)
async def delete_conversation(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> Response:
    await history.soft_delete(handles.db, principal=caller, thread_id=thread_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
