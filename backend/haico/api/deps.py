"""Request dependencies: the process's handles, the caller (a `Principal`, resolved
once per request) and the path parameters every router shares, each as an `Annotated`
alias.

The handles (settings, storage, agent runtime, event bus, turn manager) are the ones
`main.py` wired up (`wiring.handles`); a router takes them as `handles: HandlesDep` and
passes on what its service needs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from haico.schemas.common import MAX_INT, NO_NUL
from haico.services.access.principal import Principal
from haico.services.identity import bearer
from haico.services.sharing import shares
from haico.services.workspace.live_edit import CALLER
from haico.wiring.handles import Handles


async def get_handles(request: Request) -> Handles:
    handles: Handles = request.app.state.handles
    return handles


HandlesDep = Annotated[Handles, Depends(get_handles)]


def bearer_token(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or None
    return None


async def caller(request: Request, handles: HandlesDep) -> Principal:
    """Who is calling, resolved once per request: the local user when auth is off,
    else the owner of the bearer token, a study participant (`pt_…`), or a share link
    (`sh_…`, also as `?share=` on GET and SSE). What it may then do is the access
    rule's to say, in the services."""
    if handles.settings.auth == "none":
        local: Principal = request.app.state.local_user
        CALLER.set((local.id, local.name))
        return local
    token = bearer_token(request.headers.get("authorization"))
    shared = request.query_params.get("share")
    if token is None and request.method == "GET" and shared:
        # Only a link's token travels in the URL; an API token never does.
        token = shared if shared.startswith(shares.LINK_PREFIX) else None
    principal = await bearer.authenticate(handles.db, token=token)
    CALLER.set((principal.id, principal.name))
    return principal


Caller = Annotated[Principal, Depends(caller)]


# Path parameters every router shares (and the largest id a query may name). No NUL in
# a thread id and no number beyond what the columns hold: the database would fail
# instead of answering 404.
MAX_ID = 2**63 - 1
ThreadId = Annotated[str, Path(max_length=200, pattern=NO_NUL)]
ItemId = Annotated[int, Path(ge=0, le=MAX_ID)]
# A share's id (`shr_…`); any other string is simply no share (404).
ShareId = Annotated[str, Path(max_length=200, pattern=NO_NUL)]
# A step of a thread's path (`…/nodes/{k}`), and a study's id (`sy_…`).
TurnNo = Annotated[int, Path(ge=0, le=MAX_INT)]
StudyId = Annotated[str, Path(max_length=40, pattern=r"^[A-Za-z0-9_]+$")]
