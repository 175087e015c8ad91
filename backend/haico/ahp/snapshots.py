"""The state of each channel as a snapshot: the root (the `haico` agent and the
session count), a session (its chats), a chat (the selected path's last turns keyed
by id, `headTurnId`, the active turn) and a session's annotations (its notes). Each
snapshot carries the `serverSeq` it stands at (`fromSeq`); the reads behind it hold
appends off, so nothing falls between (the annotations snapshot reads its position
first, so a note added meanwhile is in it and also arrives as an idempotent upsert)."""

from __future__ import annotations

from types import SimpleNamespace

from haico.ahp import cursors
from haico.ahp.adapter import turn_from
from haico.ahp.protocol import (
    ANNOTATIONS,
    INVALID_PARAMS,
    ROOT,
    Json,
    RpcError,
    chat_uri,
    iso,
    session_uri,
)
from haico.ahp.state import ConnectionState
from haico.domain import NodeState
from haico.services.coding import codings
from haico.services.ledger import notes
from haico.services.turns import log_replay
from haico.services.turns import views as turn_views

IDLE, ERROR, IN_PROGRESS = 1, 2, 8


def path_cursor(conn: ConnectionState, root: str, before: str) -> str:
    """A cursor for the selected path's turns older than node `before`."""
    return cursors.sign(conn.key, {"k": "path", "c": root, "b": before})


def wire_turns(conn: ConnectionState, page: turn_views.TurnsPage) -> dict[str, Json]:
    assert conn.adapter is not None
    return {r.id: conn.adapter.turn(turn_from(r, page.actions.get(r.id, []))) for r in page.turns}


async def root_snapshot(conn: ConnectionState) -> Json:
    records = await turn_views.sessions(conn.db, principal=conn.user)
    conn.my_roots.update(r.root_thread_id for r in records)
    position = await log_replay.log_position(conn.db)
    agent = {
        "provider": "haico",
        "displayName": "HAICO",
        "description": "A human-AI collaborative workspace whose chats are history graphs",
        "models": [],
        "capabilities": {
            "multipleChats": {"fork": True},
            "history": {"retainsBranches": conn.settings.history_retains_branches},
        },
    }
    state = {"agents": [agent], "activeSessions": len(records)}
    return {"resource": ROOT, "state": state, "fromSeq": position}


def chat_summary(chat: turn_views.ChatRecord) -> Json:
    summary: Json = {
        "resource": chat_uri(chat.root_thread_id),
        "title": chat.title,
        "status": IN_PROGRESS if chat.running else IDLE,
        "modifiedAt": iso(chat.updated_at),
    }
    if chat.forked_from and chat.forked_from_root:
        summary["origin"] = {
            "kind": "fork",
            "chat": chat_uri(chat.forked_from_root),
            "turnId": chat.forked_from,
        }
    return summary


def session_summary(conn: ConnectionState, record: turn_views.SessionRecord) -> Json:
    assert conn.adapter is not None
    summary = {
        "resource": session_uri(record.root_thread_id),
        "provider": "haico",
        "title": record.title,
        "status": IN_PROGRESS if any(c.running for c in record.chats) else IDLE,
        "createdAt": iso(record.created_at),
        "modifiedAt": iso(record.updated_at),
    }
    chats = [{k: v for k, v in chat_summary(c).items() if k != "modifiedAt"} for c in record.chats]
    return conn.adapter.session_summary(summary, chats, chat_uri(record.root_thread_id))


async def session_snapshot(conn: ConnectionState, root: str) -> Json:
    position = await log_replay.log_position(conn.db)
    record = await turn_views.session(conn.db, principal=conn.user, root_thread_id=root)
    conn.my_roots.add(root)
    state = {
        "provider": "haico",
        "title": record.title,
        "status": IN_PROGRESS if any(c.running for c in record.chats) else IDLE,
        "lifecycle": "ready",
        "activeClients": [],
        "chats": [chat_summary(c) for c in record.chats],
        "defaultChat": chat_uri(root),
    }
    return {"resource": session_uri(root), "state": state, "fromSeq": position}


async def chat_snapshot(conn: ConnectionState, root: str) -> Json:
    assert conn.adapter is not None
    m = await turn_views.chat_material(
        conn.db,
        principal=conn.user,
        root_thread_id=root,
        limit=conn.settings.ahp_snapshot_turns,
    )
    turns = wire_turns(conn, m.path)
    head_state = turns.get(m.head_turn_id or "", {}).get("state")
    state: Json = {
        "resource": chat_uri(root),
        "title": m.title,
        "status": IN_PROGRESS if m.active else (ERROR if head_state == NodeState.ERROR else IDLE),
        "modifiedAt": iso(m.updated_at),
        "turns": turns,
    }
    if m.head_turn_id:
        state["headTurnId"] = m.head_turn_id
    if m.path.more and m.path.turns:
        state["turnsNextCursor"] = path_cursor(conn, root, m.path.turns[0].id)
    if m.active is not None:
        record = SimpleNamespace(
            id=m.active.id,
            parent_id=m.active.parent_id,
            user_message=m.active.user_message,
            started_at=m.active.started_at,
            reply="",
            state=NodeState.RUNNING,
            completed_at=None,
        )
        state["activeTurn"] = turn_from(record, m.active_actions)
    if m.forked_from and m.forked_from_root:
        state["origin"] = {
            "kind": "fork",
            "chat": chat_uri(m.forked_from_root),
            "turnId": m.forked_from,
        }
    conn.my_roots.add(root)
    return {
        "resource": chat_uri(root),
        "state": conn.adapter.chat_state(state),
        "fromSeq": m.server_seq,
    }


async def annotations_snapshot(conn: ConnectionState, root: str) -> Json:
    """A session's annotations channel (AHP 1.0.0 on): the family's notes, and the
    codings the caller sees (their own while coding is blind), each an `Annotation`
    whose `origin.turnId` is its node."""
    assert conn.adapter is not None
    if not conn.adapter.version.startswith("1."):
        raise RpcError(INVALID_PARAMS, "annotations channels need protocol version 1.0.0")
    position = await log_replay.log_position(conn.db)
    annotations = await notes.family_annotations(conn.db, principal=conn.user, root_thread_id=root)
    annotations += await codings.family_annotations(
        conn.db, principal=conn.user, root_thread_id=root
    )
    conn.my_roots.add(root)
    return {
        "resource": session_uri(root) + ANNOTATIONS,
        "state": {"annotations": annotations},
        "fromSeq": position,
    }
