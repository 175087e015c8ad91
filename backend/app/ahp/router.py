"""`/ahp`: the WebSocket endpoint. In token mode the handshake must carry a bearer
token (the `Authorization` header, or `?token=`); without a valid one it is refused."""

from __future__ import annotations

from fastapi import APIRouter, WebSocket

from app.ahp.connection import Connection
from app.errors import DomainError
from app.services import users
from app.services.handles import Handles

router = APIRouter()


def _token(ws: WebSocket) -> str | None:
    header = ws.headers.get("authorization")
    if header and header.lower().startswith("bearer "):
        return header[7:].strip() or None
    return ws.query_params.get("token")


@router.websocket("/ahp")
async def ahp(ws: WebSocket) -> None:
    handles: Handles = ws.app.state.handles
    if handles.settings.auth == "none":
        principal = ws.app.state.local_user
    else:
        try:
            principal = await users.authenticate(handles.db, token=_token(ws))
        except DomainError:
            await ws.close(code=1008)  # before accept: the handshake is refused (403)
            return
    await ws.accept()
    await Connection(ws, handles, principal).run()
