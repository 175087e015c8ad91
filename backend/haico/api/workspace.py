"""REST: the workspace surfaces of one thread."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from haico.api.deps import Caller, HandlesDep, ItemId, ThreadId
from haico.api.errors import responses
from haico.schemas.common import MAX_INT
from haico.schemas.workspace import (
    ArtifactOut,
    DocumentIn,
    ObjectiveIn,
    PreferenceIn,
    PreferenceOut,
    PreferencePatch,
    TodoIn,
    TodoOut,
    TodoPatch,
    WorkspaceOut,
)
from haico.services.workspace import edits as service

router = APIRouter(prefix="/api/conversations/{thread_id}", tags=["workspace"])

READ = responses(403, 404)
EDIT = responses(403, 404, 413)
# The studio's first edit of a conversation it has named but not created yet.
Create = Annotated[
    bool,
    Query(
        description="create the conversation (a new root with this id) if it does not "
        "exist yet, together with this edit: an edit refused or failed leaves no empty "
        "conversation"
    ),
]


@router.get("/workspace", responses=responses(403, 404, 409))
async def get_workspace(
    thread_id: ThreadId,
    handles: HandlesDep,
    caller: Caller,
    as_of_turn: Annotated[int | None, Query(ge=0, le=MAX_INT)] = None,
) -> WorkspaceOut:
    return await service.get_workspace(
        handles.db, principal=caller, thread_id=thread_id, as_of_turn=as_of_turn
    )


@router.put("/objective", responses=EDIT)
async def put_objective(
    thread_id: ThreadId,
    body: ObjectiveIn,
    handles: HandlesDep,
    caller: Caller,
    create: Create = False,
) -> WorkspaceOut:
    return await service.set_objective(
        handles.db, principal=caller, thread_id=thread_id, text=body.text, create=create
    )


@router.put("/document", responses=EDIT)
async def put_document(
    thread_id: ThreadId,
    body: DocumentIn,
    handles: HandlesDep,
    caller: Caller,
    create: Create = False,
) -> WorkspaceOut:
    return await service.put_document(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        content=body.content,
        title=body.title,
        create=create,
    )


@router.post("/preferences", status_code=status.HTTP_201_CREATED, responses=EDIT)
async def add_preference(
    thread_id: ThreadId,
    body: PreferenceIn,
    handles: HandlesDep,
    caller: Caller,
    create: Create = False,
) -> PreferenceOut:
    return await service.add_preference(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        text=body.text,
        locked=body.locked,
        create=create,
    )


@router.patch("/preferences/{pref_id}", responses=EDIT)
async def update_preference(
    thread_id: ThreadId,
    pref_id: ItemId,
    body: PreferencePatch,
    handles: HandlesDep,
    caller: Caller,
) -> PreferenceOut:
    return await service.update_preference(
        handles.db, principal=caller, thread_id=thread_id, pref_id=pref_id, patch=body
    )


@router.delete("/preferences/{pref_id}", status_code=status.HTTP_204_NO_CONTENT, responses=READ)
async def delete_preference(
    thread_id: ThreadId, pref_id: ItemId, handles: HandlesDep, caller: Caller
) -> Response:
    await service.delete_preference(
        handles.db, principal=caller, thread_id=thread_id, pref_id=pref_id
    )
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post("/todos", status_code=status.HTTP_201_CREATED, responses=EDIT)
async def add_todo(
    thread_id: ThreadId,
    body: TodoIn,
    handles: HandlesDep,
    caller: Caller,
    create: Create = False,
) -> TodoOut:
    return await service.add_todo(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        text=body.text,
        done=body.done,
        depth=body.depth,
        create=create,
    )


@router.patch("/todos/{todo_id}", responses=EDIT)
async def update_todo(
    thread_id: ThreadId, todo_id: ItemId, body: TodoPatch, handles: HandlesDep, caller: Caller
) -> TodoOut:
    return await service.update_todo(
        handles.db, principal=caller, thread_id=thread_id, todo_id=todo_id, patch=body
    )


@router.delete("/todos/{todo_id}", status_code=status.HTTP_204_NO_CONTENT, responses=READ)
async def delete_todo(
    thread_id: ThreadId, todo_id: ItemId, handles: HandlesDep, caller: Caller
) -> Response:
    await service.delete_todo(handles.db, principal=caller, thread_id=thread_id, todo_id=todo_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/artifacts/{artifact_id}", responses=READ)
async def get_artifact(
    thread_id: ThreadId, artifact_id: ItemId, handles: HandlesDep, caller: Caller
) -> ArtifactOut:
    return await service.get_artifact(
        handles.db, principal=caller, thread_id=thread_id, artifact_id=artifact_id
    )
