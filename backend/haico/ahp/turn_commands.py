"""`dispatchAction`: a client's `chat/turnStarted` runs a turn through the same
service as a REST send, and `chat/turnCancelled` cancels the running one. A refused
action comes back to its sender echoed with `rejectionReason`."""

from __future__ import annotations

import asyncio

from haico.ahp import annotation_commands
from haico.ahp.protocol import INVALID_PARAMS, PERMISSION_DENIED, Json, RpcError, family_of
from haico.ahp.state import ConnectionState, reject
from haico.domain import is_valid_text
from haico.errors import DomainError, Forbidden, InvalidInput
from haico.services.history import state as history

INVALID_TEXT = "a text is not valid Unicode (a lone surrogate)"


async def dispatch_action(conn: ConnectionState, params: Json) -> None:
    channel = params.get("channel")
    action = params.get("action")
    client_seq = params.get("clientSeq")
    if not isinstance(action, dict) or not isinstance(client_seq, int | float):
        raise RpcError(INVALID_PARAMS, "dispatchAction: channel, clientSeq, action required")
    origin = {"clientId": conn.client_id, "clientSeq": client_seq}
    if not is_valid_text(action) or not is_valid_text(channel):
        reject(conn, channel, action, origin, INVALID_TEXT)
        return
    if annotation_commands.is_annotations(channel):
        await annotation_commands.dispatch(conn, str(channel), action, origin)
        return
    root = family_of(channel, "ahp-chat")
    channel = str(channel)
    kind = action.get("type")
    if kind == "chat/turnStarted":
        await _start(conn, root, channel, action, origin)
    elif kind == "chat/turnCancelled":
        task = asyncio.create_task(_cancel(conn, root, channel, action, origin))
        conn.tasks.add(task)
        task.add_done_callback(conn.tasks.discard)
    else:
        reject(conn, channel, action, origin, f"{kind}: not an action clients dispatch here")


async def _start(
    conn: ConnectionState, root: str, channel: str, action: Json, origin: Json
) -> None:
    message = action.get("message")
    text = message.get("text") if isinstance(message, dict) else None
    if not isinstance(text, str):
        reject(conn, channel, action, origin, "message.text: expected a string")
        return
    try:
        state = await history.get_history(
            conn.db,
            principal=conn.user,
            thread_id=root,
            retains=conn.settings.history_retains_branches,
        )
        async with conn.lock:
            turn = await conn.turns.start_turn(
                principal=conn.user, thread_id=state.working_thread_id, content=text
            )
            conn.origins[turn.started_seq] = origin
    except DomainError as exc:
        reject(conn, channel, action, origin, reason_of(exc))


async def _cancel(
    conn: ConnectionState, root: str, channel: str, action: Json, origin: Json
) -> None:
    try:
        state = await history.get_history(
            conn.db,
            principal=conn.user,
            thread_id=root,
            retains=conn.settings.history_retains_branches,
        )
        active = state.active_turn
        if active is None or active.turn_id != action.get("turnId"):
            raise InvalidInput(f"turn {action.get('turnId')} is not running")
        await conn.turns.cancel(principal=conn.user, thread_id=root)
    except DomainError as exc:
        reject(conn, channel, action, origin, reason_of(exc))


def reason_of(exc: DomainError) -> str:
    """A refusal's `rejectionReason`; one above the caller's role on a shared family
    names PermissionDenied (-32009), as a request would be answered."""
    if isinstance(exc, Forbidden):
        return f"PermissionDenied ({PERMISSION_DENIED}): {exc.message}"
    return exc.message
