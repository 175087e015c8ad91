"""Sessions and chats: `listSessions`, `createSession`, `disposeSession` and
`createChat` (a fork), each through the service function its REST twin calls."""

from __future__ import annotations

from haico.ahp import delivery, snapshots
from haico.ahp.protocol import INVALID_PARAMS, Json, RpcError, family_of
from haico.ahp.state import ConnectionState
from haico.domain import NodeId
from haico.services.families import conversations
from haico.services.history import branching
from haico.services.history import state as history
from haico.services.turns import views as turn_views


async def list_sessions(conn: ConnectionState, params: Json) -> Json:
    records = await turn_views.sessions(conn.db, principal=conn.user)
    conn.my_roots.update(r.root_thread_id for r in records)
    return {"items": [snapshots.session_summary(conn, r) for r in records]}


async def create_session(conn: ConnectionState, params: Json) -> Json:
    root = family_of(params.get("channel"), "ahp-session")
    # Followed from now, so the creation reaches this connection; not when refused.
    followed = root in conn.my_roots
    conn.my_roots.add(root)
    try:
        await conversations.create(conn.db, principal=conn.user, thread_id=root)
    except BaseException:
        if not followed:
            conn.my_roots.discard(root)
        raise
    await delivery.caught_up(conn)
    return {}


async def dispose_session(conn: ConnectionState, params: Json) -> Json:
    root = family_of(params.get("channel"), "ahp-session")
    await history.soft_delete(conn.db, principal=conn.user, thread_id=root)
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
        principal=conn.user,
        thread_id=node.thread_id,
        from_turn=node.turn,
        fork_thread_id=new_root,
    )
    await delivery.caught_up(conn)
    return {}
