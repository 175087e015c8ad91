"""REST: studies (token mode only): a study and its members for its owner, joining by
link for anyone holding it, and a participant's own session."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from haico.api.deps import Caller, HandlesDep, StudyId
from haico.api.errors import responses
from haico.errors import StudiesNeedTokenAuth
from haico.schemas.common import NO_NUL
from haico.schemas.studies import (
    JoinIn,
    JoinOut,
    MemberIn,
    MemberOut,
    ParticipantMe,
    StudyCreate,
    StudyOut,
    StudyPatch,
)
from haico.services.studies import members, participant, study
from haico.wiring.handles import Handles

router = APIRouter(prefix="/api/studies", tags=["studies"])

UserName = Annotated[str, Path(min_length=1, max_length=200, pattern=NO_NUL)]


def _needs_token_mode(handles: Handles) -> None:
    if handles.settings.auth != "token":
        raise StudiesNeedTokenAuth("studies need token auth (HAICO_AUTH=token)")


@router.post("", status_code=status.HTTP_201_CREATED, responses=responses(400, 403, 413))
async def create_study(body: StudyCreate, handles: HandlesDep, caller: Caller) -> StudyOut:
    """A new open study: the task, its conditions in order (features default on), the
    consent text. The answer carries the join token."""
    _needs_token_mode(handles)
    return await study.create(handles.db, principal=caller, body=body)


@router.get("", responses=responses(400, 403, validates=False))
async def list_studies(handles: HandlesDep, caller: Caller) -> list[StudyOut]:
    """The studies the caller owns or is a member of, newest first."""
    _needs_token_mode(handles)
    return await study.list_for(handles.db, principal=caller)


@router.post("/join", status_code=status.HTTP_201_CREATED, responses=responses(400, 403, 404))
async def join_study(body: JoinIn, handles: HandlesDep) -> JoinOut:
    """Join a study by its link's token (no other credential): a participant with a
    family of its own under the condition with the fewest participants, and its token."""
    _needs_token_mode(handles)
    # Joins of one study arriving together are made together (`join_queue`).
    return await handles.joins.join(body.token)


@router.get("/participants/me", responses=responses(400, 403, validates=False))
async def get_me(handles: HandlesDep, caller: Caller) -> ParticipantMe:
    """A participant's own session: its pseudonym, study, condition, family and state."""
    _needs_token_mode(handles)
    return await participant.me(handles.db, principal=caller)


@router.post("/participants/me/consent", responses=responses(400, 403, validates=False))
async def consent(handles: HandlesDep, caller: Caller) -> ParticipantMe:
    """Record the participant's consent; its first turn may follow."""
    _needs_token_mode(handles)
    return await participant.consent(handles.db, principal=caller)


@router.post("/participants/me/finish", responses=responses(400, 403, validates=False))
async def finish(handles: HandlesDep, caller: Caller) -> ParticipantMe:
    """End the participant's session: its family is read-only for it from now on."""
    _needs_token_mode(handles)
    return await participant.finish(handles.db, principal=caller)


@router.get("/{study_id}", responses=responses(400, 403, 404))
async def get_study(study_id: StudyId, handles: HandlesDep, caller: Caller) -> StudyOut:
    """The study, for its owner and members (the join token for the owner only)."""
    _needs_token_mode(handles)
    return await study.get(handles.db, principal=caller, study_id=study_id)


@router.patch("/{study_id}", responses=responses(400, 403, 404, 413))
async def patch_study(
    study_id: StudyId, body: StudyPatch, handles: HandlesDep, caller: Caller
) -> StudyOut:
    """Rename or describe the study, close or reopen it, reveal codings. Owner only."""
    _needs_token_mode(handles)
    return await study.patch(handles.db, principal=caller, study_id=study_id, body=body)


@router.post(
    "/{study_id}/members",
    status_code=status.HTTP_201_CREATED,
    responses=responses(400, 403, 404, 409, 413),
)
async def add_member(
    study_id: StudyId, body: MemberIn, handles: HandlesDep, caller: Caller
) -> MemberOut:
    """Make a user a coder or viewer of the study (again: change its role). Owner only."""
    _needs_token_mode(handles)
    return await members.add(handles.db, principal=caller, study_id=study_id, body=body)


@router.get("/{study_id}/members", responses=responses(400, 403, 404))
async def list_members(study_id: StudyId, handles: HandlesDep, caller: Caller) -> list[MemberOut]:
    """The study's members (owner and members read it)."""
    _needs_token_mode(handles)
    return await members.list_members(handles.db, principal=caller, study_id=study_id)


@router.delete(
    "/{study_id}/members/{user}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=responses(400, 403, 404),
)
async def remove_member(
    study_id: StudyId, user: UserName, handles: HandlesDep, caller: Caller
) -> Response:
    """Take a member off the study. Owner only."""
    _needs_token_mode(handles)
    await members.remove(handles.db, principal=caller, study_id=study_id, user=user)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
