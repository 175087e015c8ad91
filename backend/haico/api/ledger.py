"""REST: the research ledger (a node's provenance and notes, codes, the analysis
export, a path as a document)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Response, status
from fastapi.responses import StreamingResponse

from haico.api.deps import Caller, HandlesDep, ItemId, ThreadId, TurnNo
from haico.api.errors import responses
from haico.api.headers import CSP, inline_style_policy
from haico.schemas.common import NO_NUL
from haico.schemas.compare import EditOrigin
from haico.schemas.ledger import BranchUsage, CodeCount, NodeOut, NoteIn, NoteOut, NotePatch
from haico.services.ledger import notes as notes_service
from haico.services.ledger import provenance as ledger
from haico.services.reports import analysis_export, path_doc, path_render

router = APIRouter(prefix="/api", tags=["ledger"])

# A node's turn number in a path.
CSV = "text/csv; charset=utf-8"


def _csv(body: AsyncIterator[str], filename: str) -> StreamingResponse:
    return StreamingResponse(
        body,
        media_type=CSV,
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/conversations/{thread_id}/nodes/{k}", responses=responses(403, 404))
async def get_node(
    thread_id: ThreadId,
    k: TurnNo,
    handles: HandlesDep,
    caller: Caller,
) -> NodeOut:
    """Node `k` of the thread's path: its record, provenance, edits and notes."""
    return await ledger.get_node(handles.db, principal=caller, thread_id=thread_id, turn=k)


@router.post(
    "/conversations/{thread_id}/nodes/{k}/notes",
    status_code=status.HTTP_201_CREATED,
    responses=responses(403, 404, 413),
)
async def create_note(
    thread_id: ThreadId, k: TurnNo, body: NoteIn, handles: HandlesDep, caller: Caller
) -> NoteOut:
    """A note on node `k` of the thread's path; never shown to the model."""
    return await notes_service.create_note(
        handles.db, principal=caller, thread_id=thread_id, turn=k, body=body
    )


@router.get("/conversations/{thread_id}/notes", responses=responses(403, 404))
async def list_notes(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> list[NoteOut]:
    """Every note on the nodes of the thread's family, oldest first."""
    return await notes_service.family_notes(handles.db, principal=caller, thread_id=thread_id)


@router.patch("/notes/{note_id}", responses=responses(403, 404, 413))
async def patch_note(
    note_id: ItemId, body: NotePatch, handles: HandlesDep, caller: Caller
) -> NoteOut:
    return await notes_service.update_note(handles.db, principal=caller, note_id=note_id, body=body)


@router.delete(
    "/notes/{note_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(403, 404)
)
async def delete_note(note_id: ItemId, handles: HandlesDep, caller: Caller) -> Response:
    await notes_service.delete_note(handles.db, principal=caller, note_id=note_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/conversations/{thread_id}/usage", responses=responses(403, 404))
async def family_usage(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller
) -> list[BranchUsage]:
    """Tokens and cost per branch of the family (each branch's own steps)."""
    return await ledger.family_usage(handles.db, principal=caller, thread_id=thread_id)


@router.get("/conversations/{thread_id}/edits", responses=responses(403, 404))
async def family_edits(
    thread_id: ThreadId,
    handles: HandlesDep,
    caller: Caller,
    origin: Literal["user", "agent", "merge", "replay", "import"] | None = None,
) -> list[EditOrigin]:
    """Every workspace change of the family and who made it, oldest first."""
    return await ledger.family_edits(
        handles.db, principal=caller, thread_id=thread_id, origin=origin
    )


@router.get("/codes", responses=responses(validates=False))
async def list_codes(handles: HandlesDep, caller: Caller) -> list[CodeCount]:
    """The caller's codebook: each code and how many notes carry it."""
    return await notes_service.codebook(handles.db, principal=caller)


@router.get(
    "/conversations/{thread_id}/export.csv",
    responses={**responses(403, 404, stream=True), 200: {"content": {CSV: {}}}},
    response_class=StreamingResponse,
)
async def export_family_csv(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller
) -> StreamingResponse:
    """Every node of the thread's family as a CSV row (see docs/analysis.md)."""
    root = await analysis_export.check_family(handles.db, principal=caller, thread_id=thread_id)
    return _csv(analysis_export.stream_csv(handles.db, [root]), f"haico-{root}.csv")


@router.get(
    "/export.csv",
    responses={**responses(validates=False, stream=True), 200: {"content": {CSV: {}}}},
    response_class=StreamingResponse,
)
async def export_all_csv(handles: HandlesDep, caller: Caller) -> StreamingResponse:
    """Every node of every family of the caller as a CSV row."""
    roots = await analysis_export.user_families(handles.db, principal=caller)
    return _csv(analysis_export.stream_csv(handles.db, roots), "haico-export.csv")


@router.get(
    "/conversations/{thread_id}/path",
    responses={
        **responses(403, 404, 409, stream=True),
        200: {"content": {"text/markdown": {}, "text/html": {}}},
    },
    response_class=Response,
)
async def get_path(
    thread_id: ThreadId,
    handles: HandlesDep,
    caller: Caller,
    node: Annotated[str | None, Query(min_length=1, max_length=80, pattern=NO_NUL)] = None,
    format: Annotated[Literal["md", "html"], Query()] = "md",
    notes: bool = False,
) -> Response:
    """The path to `node` (default: the thread's latest) as one document: the final
    workspace, then each step. Only that lineage, never another branch."""
    text = await path_doc.path_document(
        handles.db, principal=caller, thread_id=thread_id, node=node, fmt=format, notes=notes
    )
    if format == "html":
        policy = {CSP: inline_style_policy(path_render.STYLESHEET)}
        return Response(text, media_type="text/html; charset=utf-8", headers=policy)
    return Response(text, media_type="text/markdown; charset=utf-8")
