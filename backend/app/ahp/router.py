"""`/ahp`: the WebSocket endpoint. In token mode the handshake must carry a bearer
token, in one of three places: the `Authorization` header; a `bearer.<token>`
subprotocol offered next to `ahp` (a browser's WebSocket cannot set headers, but it
can offer subprotocols; the host accepts `ahp`, never echoing the token); or
`?token=` (logged redacted). Without a valid one the handshake is refused. A share
link's token (`sh_…`) is accepted too: the connection then reads (and, as a commenter,
annotates) that one family, and closes within seconds of the link's revocation."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from app.ahp.connection import Connection
from app.errors import DomainError
from app.services import shares
from app.services.handles import Handles
from app.services.live_edit import CALLER

router = APIRouter()

SUBPROTOCOL = "ahp"
BEARER_SUBPROTOCOL = "bearer."


def _token(ws: WebSocket) -> str | None:
    header = ws.headers.get("authorization")
    if header and header.lower().startswith("bearer "):
        return header[7:].strip() or None
    for offered in _offered(ws):
        if offered.startswith(BEARER_SUBPROTOCOL):
            return offered.removeprefix(BEARER_SUBPROTOCOL) or None
    return ws.query_params.get("token")


def _offered(ws: WebSocket) -> list[str]:
    return list(ws.scope.get("subprotocols") or ())


@router.websocket("/ahp")
async def ahp(ws: WebSocket) -> None:
    handles: Handles = ws.app.state.handles
    if handles.settings.auth == "none":
        principal = ws.app.state.local_user
    else:
        try:
            principal = await shares.authenticate(handles.db, token=_token(ws))
        except DomainError:
            await ws.close(code=1008)  # before accept: the handshake is refused (403)
            return
    await ws.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in _offered(ws) else None)
    CALLER.set((principal.id, principal.name))  # the connection's tasks inherit it
    await Connection(ws, handles, principal).run()
