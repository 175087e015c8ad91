"""Request dependencies: the process's handles, the caller, and the path parameters
every router shares, each as an `Annotated` alias.

The handles (settings, storage, agent runtime, event bus, turn manager) are the ones
`main.py` wired up (`services.handles`); a router takes them as `handles: HandlesDep` and
passes on what its service needs.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from app.schemas import NO_NUL
from app.services import users
from app.services.handles import Handles
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
    """The caller: the local user when auth is off, else the owner of the bearer token."""
    if handles.settings.auth == "none":
        local: Principal = request.app.state.local_user
        return local
    token = bearer_token(request.headers.get("authorization"))
    return await users.authenticate(handles.db, token=token)


CurrentUser = Annotated[Principal, Depends(current_user)]


# Path parameters every router shares (and the largest id a query may name). No NUL in
# a thread id and no number beyond what the columns hold: the database would fail
# instead of answering 404.
MAX_ID = 2**63 - 1
ThreadId = Annotated[str, Path(max_length=200, pattern=NO_NUL)]
ItemId = Annotated[int, Path(ge=0, le=MAX_ID)]
