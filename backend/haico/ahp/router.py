"""`/ahp`: the WebSocket endpoint. In token mode the handshake must carry a bearer
token, in one of three places: the `Authorization` header; a `bearer.<token>`
subprotocol offered next to `ahp` (a browser's WebSocket cannot set headers, but it
can offer subprotocols; the host accepts `ahp`, never echoing the token); or
`?token=` (logged redacted). Without a valid one the handshake is refused. A share
link's token (`sh_…`) is accepted too: the connection then reads (and, as a commenter,
annotates) that one family, and closes within seconds of the link's revocation. A user
holding `HAICO_MAX_STREAMS_PER_USER` streams and sockets already is refused with 429."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket
from fastapi.responses import JSONResponse

from haico.ahp.connection import Connection
from haico.errors import DomainError, TooManyStreams, http_status
from haico.services.identity import bearer
from haico.services.workspace.live_edit import CALLER
from haico.wiring.handles import Handles

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
            principal = await bearer.authenticate(handles.db, token=_token(ws))
        except DomainError:
            await ws.close(code=1008)  # before accept: the handshake is refused (403)
            return
    try:
        handles.streams.take(principal.id)
    except TooManyStreams as exc:
        await _refuse(ws, exc)
        return
    try:
        await ws.accept(subprotocol=SUBPROTOCOL if SUBPROTOCOL in _offered(ws) else None)
        CALLER.set((principal.id, principal.name))  # the connection's tasks inherit it
        await Connection(ws, handles, principal).run()
    finally:
        handles.streams.give_back(principal.id)


async def _refuse(ws: WebSocket, exc: TooManyStreams) -> None:
    """The handshake refused with 429 and the error's body where the server can answer
    a handshake with an HTTP response (uvicorn can); a bare refusal (403) elsewhere."""
    if "websocket.http.response" in ws.scope.get("extensions", {}):
        body = {"code": exc.code, "message": exc.message}
        await ws.send_denial_response(JSONResponse(body, status_code=http_status(exc)))
    else:
        await ws.close(code=1008)
