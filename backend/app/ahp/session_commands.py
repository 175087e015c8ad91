"""Sessions and chats: `listSessions`, `createSession`, `disposeSession` and
`createChat` (a fork), each through the service function its REST twin calls."""

from __future__ import annotations

from app.ahp import delivery, snapshots
from app.ahp.protocol import INVALID_PARAMS, Json, RpcError, family_of
from app.ahp.state import ConnectionState
from app.domain import NodeId
from app.services import branching, conversations, history, turn_views


async def list_sessions(conn: ConnectionState, params: Json) -> Json:
    records = await turn_views.sessions(conn.db, user_id=conn.user.id)
    conn.my_roots.update(r.root_thread_id for r in records)
    return {"items": [snapshots.session_summary(conn, r) for r in records]}


async def create_session(conn: ConnectionState, params: Json) -> Json:
    root = family_of(params.get("channel"), "ahp-session")
    conn.my_roots.add(root)
    await conversations.create(conn.db, user_id=conn.user.id, thread_id=root)
    await delivery.caught_up(conn)
    return {}


async def dispose_session(conn: ConnectionState, params: Json) -> Json:
    root = family_of(params.get("channel"), "ahp-session")
    await history.soft_delete(conn.db, user_id=conn.user.id, thread_id=root)
    await delivery.caught_up(conn)
    return {}


async def create_chat(conn: ConnectionState, params: Json) -> Json:
    family_of(params.get("channel"), "ahp-session")
    new_root = family_of(params.get("chat"), "ahp-chat")
    source = params.get("source")
    if not isinstance(source, dict) or source.get("kind") != "fork":
        raise RpcError(INVALID_PARAMS, "source: HAICO creates chats only as forks")
    family_of(source.get("chat"), "ahp-chat")
    node = NodeId.parse(str(source.get("turnId")))
    if node is None:
        raise RpcError(INVALID_PARAMS, "source.turnId: not a turn of this host")
    await branching.create_fork(
        conn.db,
        conn.runtime,
        user_id=conn.user.id,
        thread_id=node.thread_id,
        from_turn=node.turn,
        fork_thread_id=new_root,
    )
    await delivery.caught_up(conn)
    return {}
