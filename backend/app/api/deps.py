"""Request dependencies: the process's handles, the caller, and the path parameters
every router shares, each as an `Annotated` alias.

The handles (settings, storage, agent runtime, event bus, turn manager) are the ones
`main.py` wired up (`services.handles`); a router takes them as `handles: HandlesDep` and
passes on what its service needs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from app.errors import Forbidden
from app.schemas import NO_NUL
from app.services import shares
from app.services.handles import Handles
from app.services.live_edit import CALLER
from app.services.users import Principal


async def get_handles(request: Request) -> Handles:
    handles: Handles = request.app.state.handles
    return handles


HandlesDep = Annotated[Handles, Depends(get_handles)]


def bearer_token(authorization: str | None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or None
    return None


async def current_user(request: Request, handles: HandlesDep) -> Principal:
    """The caller: the local user when auth is off, else the owner of the bearer token,
    or a share link's own user (`sh_…`, also as `?share=` on GET and SSE)."""
    if handles.settings.auth == "none":
        local: Principal = request.app.state.local_user
        CALLER.set((local.id, local.name))
        return local
    token = bearer_token(request.headers.get("authorization"))
    shared = request.query_params.get("share")
    if token is None and request.method == "GET" and shared:
        # Only a link's token travels in the URL; an API token never does.
        token = shared if shared.startswith(shares.LINK_PREFIX) else None
    principal = await shares.authenticate(handles.db, token=token)
    if principal.link_root is not None:
        check_link_scope(request.method, request.url.path)
    CALLER.set((principal.id, principal.name))
    return principal


def check_link_scope(method: str, path: str) -> None:
    """A link opens one family and owns nothing: it may use that family's endpoints
    (the access check decides which), list and search what is shared with it, nothing
    else — no new conversations, imports, forks (a copy needs an owner) or codebook."""
    parts = path.rstrip("/").split("/")
    in_family = len(parts) >= 4 and parts[:3] == ["", "api", "conversations"]
    in_family = in_family and parts[3] != "import" and parts[-1] != "fork"
    is_note = len(parts) == 4 and parts[:3] == ["", "api", "notes"]
    listing = method == "GET" and path.rstrip("/") in ("/api/conversations", "/api/search")
    if not (in_family or is_note or listing):
        raise Forbidden("a share link opens its family only")


CurrentUser = Annotated[Principal, Depends(current_user)]


# Path parameters every router shares (and the largest id a query may name). No NUL in
# a thread id and no number beyond what the columns hold: the database would fail
# instead of answering 404.
MAX_ID = 2**63 - 1
ThreadId = Annotated[str, Path(max_length=200, pattern=NO_NUL)]
ItemId = Annotated[int, Path(ge=0, le=MAX_ID)]
