"""REST: conversations."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from app.api.deps import CurrentUser, HandlesDep, ThreadId
from app.api.errors import responses
from app.schemas import ConversationCreate, ConversationOut, ConversationPatch
from app.services import conversations as service
from app.services import history, profiles

router = APIRouter(prefix="/api/conversations", tags=["conversations"])


@router.post("", status_code=status.HTTP_201_CREATED, responses=responses(409, 413))
async def create_conversation(
    body: ConversationCreate, handles: HandlesDep, user: CurrentUser
) -> ConversationOut:
    """A new conversation; without a title it is named after its objective, or else
    after its first message."""
    return await service.create(
        handles.db,
        user_id=user.id,
        title=body.title,
        objective=body.objective,
        thread_id=body.new_id,
    )


@router.get("", responses=responses())
async def list_conversations(
    handles: HandlesDep, user: CurrentUser, archived: bool = False
) -> list[ConversationOut]:
    """The caller's threads; `archived=true` includes archived branches (and families)."""
    return await service.list_for_user(handles.db, user_id=user.id, archived=archived)


@router.get("/{thread_id}", responses=responses(403, 404))
async def get_conversation(
    thread_id: ThreadId, handles: HandlesDep, user: CurrentUser
) -> ConversationOut:
    return await service.get(handles.db, user_id=user.id, thread_id=thread_id)


@router.patch("/{thread_id}", responses=responses(403, 404, 413))
async def rename_conversation(
    thread_id: ThreadId, body: ConversationPatch, handles: HandlesDep, user: CurrentUser
) -> ConversationOut:
    set_name = "name" in body.model_fields_set
    if body.profile_id is not None:
        out = await profiles.set_branch_profile(
            handles.db,
            handles.settings,
            user_id=user.id,
            thread_id=thread_id,
            profile_id=body.profile_id,
        )
        if body.title is None and not set_name and body.archived is None:
            return out
    if body.archived is not None:
        archived = await service.set_archived(
            handles.db, user_id=user.id, thread_id=thread_id, archived=body.archived
        )
        if body.title is None and not set_name:
            return archived
    if body.title is None and not set_name:
        return await service.get(handles.db, user_id=user.id, thread_id=thread_id)
    return await service.rename(
        handles.db,
        user_id=user.id,
        thread_id=thread_id,
        title=body.title,
        name=body.name,
        set_name=set_name,
    )


@router.delete(
    "/{thread_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(403, 404, 409)
)
async def delete_conversation(
    thread_id: ThreadId, handles: HandlesDep, user: CurrentUser
) -> Response:
    await history.soft_delete(handles.db, user_id=user.id, thread_id=thread_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
