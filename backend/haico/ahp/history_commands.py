"""The history graph: `checkoutChatHistory` (the same service call as the REST
checkout, so subscribers of either face see one `chat/historyCheckedOut`) and
`fetchTurns`, which pages either the selected path backwards or the direct children
of a node, with signed cursors any process of the host accepts."""

from __future__ import annotations

from typing import Any

from haico.ahp import cursors, delivery, snapshots
from haico.ahp.protocol import (
    INVALID_PARAMS,
    Json,
    RpcError,
    action_message,
    family_of,
    opt_str,
)
from haico.ahp.state import ConnectionState
from haico.services.history import state as history
from haico.services.turns import views as turn_views


async def checkout(conn: ConnectionState, params: Json) -> Json:
    root = family_of(params.get("channel"), "ahp-chat")
    turn_id = opt_str(params, "turnId")
    expected: Any = history.UNSET
    if "expectedHeadTurnId" in params:
        expected = opt_str(params, "expectedHeadTurnId")
    force = params.get("force", False)
    if not isinstance(force, bool):
        raise RpcError(INVALID_PARAMS, "force: expected a boolean")
    await history.checkout(
        conn.db,
        principal=conn.user,
        thread_id=root,
        turn_id=turn_id,
        expected_head_turn_id=expected,
        force=force,
        retains=conn.settings.history_retains_branches,
    )
    await delivery.caught_up(conn)
    return {}


def _cursor_payload(conn: ConnectionState, params: Json, root: str) -> Json:
    cursor = opt_str(params, "cursor")
    if cursor is not None and "parentTurnId" in params:
        raise RpcError(INVALID_PARAMS, "cursor and parentTurnId cannot be combined")
    if cursor is not None:
        try:
            payload = cursors.open_cursor(conn.key, cursor)
        except (cursors.BadCursor, ValueError) as exc:
            raise RpcError(INVALID_PARAMS, "cursor: not a cursor this host issued") from exc
        if payload.get("c") != root:
            raise RpcError(INVALID_PARAMS, "cursor: issued for another chat")
        return payload
    if "parentTurnId" in params:
        return {"k": "kids", "c": root, "p": opt_str(params, "parentTurnId"), "a": 0}
    return {"k": "path", "c": root, "b": None}


async def fetch_turns(conn: ConnectionState, params: Json) -> Json:
    channel = params.get("channel")
    root = family_of(channel, "ahp-chat")
    payload = _cursor_payload(conn, params, root)
    size = conn.settings.ahp_page_size
    result: Json = {}
    action: Json = {"type": "chat/turnsLoaded"}
    if payload.get("k") == "kids":
        page, after = await turn_views.children(
            conn.db,
            principal=conn.user,
            root_thread_id=root,
            parent_turn_id=payload.get("p"),
            after_order=int(payload.get("a") or 0),
            limit=size,
        )
        action["turns"] = snapshots.wire_turns(conn, page)
        if after is not None:
            result["nextCursor"] = cursors.sign(conn.key, {**payload, "a": after})
    else:
        before = payload.get("b")
        if before is None:
            material = await turn_views.chat_material(
                conn.db, principal=conn.user, root_thread_id=root, limit=size
            )
            page = material.path
        else:
            page = await turn_views.older_on_path(
                conn.db, principal=conn.user, root_thread_id=root, before=before, limit=size
            )
        action["turns"] = snapshots.wire_turns(conn, page)
        if page.more and page.turns:
            action["turnsNextCursor"] = snapshots.path_cursor(conn, root, page.turns[0].id)
            result["nextCursor"] = action["turnsNextCursor"]
    async with conn.lock:
        envelope = {"channel": channel, "action": action, "serverSeq": conn.seen_seq}
        conn.out.send(action_message(envelope))
    return result
