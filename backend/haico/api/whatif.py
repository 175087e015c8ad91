"""REST: what if — model profiles, replay jobs, the aligned comparison of two paths."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Response, status

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.whatif import (
    NODE_PATTERN,
    JobOut,
    PathsCompared,
    ProfileIn,
    ProfileOut,
    ProfilePatch,
    ReplayIn,
)
from haico.services.compare import paths as compare_paths
from haico.services.profiles import service as profiles
from haico.services.whatif import replay

router = APIRouter(prefix="/api", tags=["what if"])

ProfileId = Annotated[str, Path(max_length=40, pattern=r"^[A-Za-z0-9_]+$")]
JobId = Annotated[str, Path(max_length=40, pattern=r"^[A-Za-z0-9_]+$")]
NodeParam = Annotated[str, Query(max_length=60, pattern=NODE_PATTERN)]


@router.get("/profiles", responses=responses(validates=False))
async def list_profiles(handles: HandlesDep, caller: Caller) -> list[ProfileOut]:
    """`default` (the server's configured model) first, then the caller's profiles."""
    return await profiles.list_profiles(handles.db, handles.settings, principal=caller)


@router.post("/profiles", status_code=status.HTTP_201_CREATED, responses=responses(409, 413))
async def create_profile(body: ProfileIn, handles: HandlesDep, caller: Caller) -> ProfileOut:
    """A named profile; its provider must be one this server has (else 422
    `provider_unavailable`)."""
    return await profiles.create_profile(handles.db, handles.settings, principal=caller, body=body)


@router.get("/profiles/{profile_id}", responses=responses(403, 404))
async def get_profile(profile_id: ProfileId, handles: HandlesDep, caller: Caller) -> ProfileOut:
    return await profiles.get_profile(
        handles.db, handles.settings, principal=caller, profile_id=profile_id
    )


@router.patch("/profiles/{profile_id}", responses=responses(403, 404, 409, 413))
async def update_profile(
    profile_id: ProfileId, body: ProfilePatch, handles: HandlesDep, caller: Caller
) -> ProfileOut:
    return await profiles.update_profile(
        handles.db, handles.settings, principal=caller, profile_id=profile_id, body=body
    )


@router.delete(
    "/profiles/{profile_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    responses=responses(403, 404),
)
async def delete_profile(profile_id: ProfileId, handles: HandlesDep, caller: Caller) -> Response:
    """Delete the profile; branches that used it run on `default` from now on."""
    await profiles.delete_profile(handles.db, principal=caller, profile_id=profile_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.post(
    "/conversations/{thread_id}/replay",
    status_code=status.HTTP_202_ACCEPTED,
    responses=responses(403, 404, 413, 429),
)
async def start_replay(
    thread_id: ThreadId, body: ReplayIn, handles: HandlesDep, caller: Caller
) -> JobOut:
    """A job that, for each repeat, branches at `from_node`'s parent and re-sends the
    user messages of `from_node … to_node` in order with the profile."""
    return await replay.start(handles, principal=caller, thread_id=thread_id, body=body)


@router.get("/conversations/{thread_id}/jobs", responses=responses(403, 404))
async def family_jobs(thread_id: ThreadId, handles: HandlesDep, caller: Caller) -> list[JobOut]:
    """The caller's jobs on this thread's family, newest first."""
    return await replay.family_jobs(handles.db, principal=caller, thread_id=thread_id)


@router.get("/jobs/{job_id}", responses=responses(403, 404))
async def get_job(job_id: JobId, handles: HandlesDep, caller: Caller) -> JobOut:
    return await replay.get_job(handles.db, principal=caller, job_id=job_id)


@router.post("/jobs/{job_id}/cancel", responses=responses(403, 404))
async def cancel_job(job_id: JobId, handles: HandlesDep, caller: Caller) -> JobOut:
    """Cancel the job (its running turn too); what it built stays."""
    return await replay.cancel(handles, principal=caller, job_id=job_id)


@router.get("/conversations/{thread_id}/compare-paths", responses=responses(403, 404))
async def compare_two_paths(
    thread_id: ThreadId, a: NodeParam, b: NodeParam, handles: HandlesDep, caller: Caller
) -> PathsCompared:
    """The lineages of `a` and `b` from their shared node down, paired step by step."""
    return await compare_paths.compare_paths(
        handles.db, principal=caller, thread_id=thread_id, a=a, b=b
    )
