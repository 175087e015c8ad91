"""REST: coding (codebooks, codings of a step or a span, agreement, pairwise
judgments of siblings). Every route makes one service call."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status

from haico.api.deps import Caller, HandlesDep, ItemId, StudyId, ThreadId, TurnNo
from haico.api.errors import responses
from haico.schemas.coding import (
    AgreementOut,
    CodebookIn,
    CodebookOut,
    CodebookPatch,
    CodeSuggestion,
    CodingIn,
    CodingOut,
    JudgmentIn,
    JudgmentOut,
)
from haico.schemas.common import NO_NUL
from haico.services.coding import agreement, codebooks, codings, judgments, study_side

router = APIRouter(prefix="/api", tags=["coding"])

# A family whose codebooks are asked for (a reader of it reads its owner's codebooks).
ForThread = Annotated[str | None, Query(min_length=1, max_length=200, pattern=NO_NUL)]
# Coder names, comma separated (a query string stays well under a request line's limit).
Coders = Annotated[str | None, Query(max_length=500, pattern=NO_NUL)]


@router.post("/codebooks", status_code=status.HTTP_201_CREATED, responses=responses(403, 413))
async def create_codebook(body: CodebookIn, handles: HandlesDep, caller: Caller) -> CodebookOut:
    """A codebook of the caller's with its first codes (`parent`: an id, or the name
    of a code listed before it)."""
    return await codebooks.create(handles.db, principal=caller, body=body)


@router.get("/codebooks", responses=responses(403, 404))
async def list_codebooks(
    handles: HandlesDep, caller: Caller, thread_id: ForThread = None
) -> list[CodebookOut]:
    """The caller's codebooks; with `thread_id`, the codebooks that family's codings
    draw on (its owner's), for any reader of it."""
    return await codebooks.list_for(handles.db, principal=caller, thread_id=thread_id)


@router.get("/codebooks/suggestions", responses=responses(403, validates=False))
async def code_suggestions(handles: HandlesDep, caller: Caller) -> list[CodeSuggestion]:
    """The free-text codes of the caller's notes that none of their codebooks holds."""
    return await codebooks.suggestions(handles.db, principal=caller)


@router.get("/codebooks/{codebook_id}", responses=responses(403, 404))
async def get_codebook(
    codebook_id: ItemId, handles: HandlesDep, caller: Caller, thread_id: ForThread = None
) -> CodebookOut:
    return await codebooks.get(
        handles.db, principal=caller, codebook_id=codebook_id, thread_id=thread_id
    )


@router.patch("/codebooks/{codebook_id}", responses=responses(403, 404, 413))
async def patch_codebook(
    codebook_id: ItemId, body: CodebookPatch, handles: HandlesDep, caller: Caller
) -> CodebookOut:
    """Rename the codebook; add, rename and retire codes (never delete), all or none."""
    return await codebooks.update(handles.db, principal=caller, codebook_id=codebook_id, body=body)


@router.post(
    "/conversations/{thread_id}/nodes/{k}/codings",
    status_code=status.HTTP_201_CREATED,
    responses=responses(403, 404, 413),
)
async def create_coding(
    thread_id: ThreadId, k: TurnNo, body: CodingIn, handles: HandlesDep, caller: Caller
) -> CodingOut:
    """Code node `k` of the thread's path: the whole step, or a span (code points)."""
    return await codings.create(
        handles.db, principal=caller, thread_id=thread_id, turn=k, body=body
    )


@router.get("/conversations/{thread_id}/codings", responses=responses(403, 404))
async def list_codings(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> list[CodingOut]:
    """The caller's own codings of the family; every coder's once revealed (the
    owner always sees all)."""
    return await codings.family_codings(handles.db, principal=caller, thread_id=thread_id)


@router.delete(
    "/codings/{coding_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(403, 404)
)
async def delete_coding(coding_id: ItemId, handles: HandlesDep, caller: Caller) -> Response:
    await codings.delete(handles.db, principal=caller, coding_id=coding_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/conversations/{thread_id}/agreement", responses=responses(403, 404))
async def family_agreement(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller, coders: Coders = None
) -> AgreementOut:
    """Percent agreement, Cohen's κ and Krippendorff's α among `coders` (names, comma
    separated; default: every coder of the family), per code and pooled."""
    return await agreement.family_agreement(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        coders=agreement.parse_coders(coders),
    )


@router.post(
    "/conversations/{thread_id}/judgments",
    status_code=status.HTTP_201_CREATED,
    responses=responses(403, 404, 413),
)
async def create_judgment(
    thread_id: ThreadId, body: JudgmentIn, handles: HandlesDep, caller: Caller
) -> JudgmentOut:
    """Which of two sibling nodes is better (`a`, `b` or `tie`); 422 `not_siblings`."""
    return await judgments.create(handles.db, principal=caller, thread_id=thread_id, body=body)


@router.get("/conversations/{thread_id}/judgments", responses=responses(403, 404))
async def list_judgments(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller
) -> list[JudgmentOut]:
    return await judgments.family_judgments(handles.db, principal=caller, thread_id=thread_id)


@router.get("/studies/{study_id}/agreement", responses=responses(403, 404))
async def study_agreement(
    study_id: StudyId, handles: HandlesDep, caller: Caller, coders: Coders = None
) -> AgreementOut:
    """Agreement over every family of the study (default: the study's coders)."""
    return await study_side.study_agreement(
        handles.db,
        principal=caller,
        study_id=study_id,
        coders=agreement.parse_coders(coders),
    )
