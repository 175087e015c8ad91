"""A client-side AHP chat reducer with the "Chats as a DAG" extension.

Pure functions over JSON-shaped dicts, for API consumers and the tests: apply the
host's chat actions to a `ChatState` snapshot and get the state a fresh `subscribe`
would return. `turns` is a record keyed by turn id; `headTurnId` names the selected
path's last turn. Both wire versions are understood: a 1.0.0 `chat/error` carries an
error `part` (appended to the turn's parts), a 0.7.0 one an `error` (kept as
`Turn.error`).

Covered: turn lifecycle (`turnStarted`, `delta`, `responsePart`, `reasoning`, `usage`,
`turnComplete`, `turnCancelled`, `error`), the DAG actions (`turnsLoaded` as a
record, `historyCheckedOut`, `turnsPruned`), `activityChanged`, `draftChanged`,
pending and queued messages, working directories, and the tool-call and input-request
state machines (`haico.ahp.tool_calls`); unknown action types leave the state unchanged.

    state = snapshot["state"]
    for envelope in received:
        state = reduce_chat(state, envelope["action"])
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from haico.ahp import tool_calls

State = dict[str, Any]
Action = dict[str, Any]


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def selected_path(state: State) -> list[str]:
    """Turn ids from the root to `headTurnId`, following `parentTurnId` (loaded turns)."""
    turns: dict[str, Any] = state.get("turns") or {}
    out: list[str] = []
    current = state.get("headTurnId")
    seen: set[str] = set()
    while current and current in turns and current not in seen:
        seen.add(current)
        out.append(current)
        current = turns[current].get("parentTurnId")
    return list(reversed(out))


def _turn_parts(state: State, turn_id: Any) -> list[dict[str, Any]] | None:
    active = state.get("activeTurn")
    if not active or active.get("id") != turn_id:
        return None
    parts: list[dict[str, Any]] = active.setdefault("responseParts", [])
    return parts


def _end_turn(state: State, action: Action, how: str, now: str) -> None:
    active = state.get("activeTurn")
    if not active or active.get("id") != action.get("turnId"):
        return
    parts = [
        {"kind": "toolCall", "toolCall": tool_calls.cancelled_at_turn_end(part["toolCall"])}
        if part.get("kind") == "toolCall"
        and part["toolCall"].get("status") not in ("completed", "cancelled")
        else part
        for part in active.get("responseParts") or []
    ]
    turn: dict[str, Any] = {
        "id": active["id"],
        "startedAt": active.get("startedAt"),
        "duration": max(0, action.get("duration") or 0),
        "message": active.get("message"),
        "responseParts": parts,
        "usage": active.get("usage"),
        "state": how,
    }
    if active.get("parentTurnId"):
        turn["parentTurnId"] = active["parentTurnId"]
    if how == "error":
        if "part" in action:
            parts.append(action["part"])
        elif "error" in action:
            turn["error"] = action["error"]
    turns = state.get("turns")
    if isinstance(turns, list):  # a pre-DAG snapshot
        turns.append(turn)
    else:
        state.setdefault("turns", {})[turn["id"]] = turn
        state["headTurnId"] = turn["id"]
    state.pop("activeTurn", None)
    state["status"] = tool_calls.summary_status(state, failed=how == "error")
    state["modifiedAt"] = now


def _pending(state: State, action: Action) -> None:
    kind = action.get("kind")
    message = action.get("message")
    if kind == "steering":
        state["steeringMessage"] = {"id": action["id"], "message": message}
        return
    queue = list(state.get("queuedMessages") or [])
    entry = {"id": action["id"], "message": message}
    for i, existing in enumerate(queue):
        if existing.get("id") == action["id"]:
            queue[i] = entry
            break
    else:
        queue.append(entry)
    state["queuedMessages"] = queue


def _pending_removed(state: State, action: Action) -> None:
    if action.get("kind") == "steering":
        steering = state.get("steeringMessage")
        if steering and steering.get("id") == action.get("id"):
            state.pop("steeringMessage", None)
        return
    queue = [m for m in state.get("queuedMessages") or [] if m.get("id") != action.get("id")]
    if queue:
        state["queuedMessages"] = queue
    else:
        state.pop("queuedMessages", None)


def reduce_chat(state: State, action: Action, *, now: Callable[[], str] = utc_now) -> State:
    """The state after `action` (a new dict; `state` is not modified)."""
    state = copy.deepcopy(state)
    kind = action.get("type")
    turn_id = action.get("turnId")
    if kind == "chat/turnStarted":
        started: dict[str, Any] = {
            "id": turn_id,
            "startedAt": action.get("startedAt"),
            "message": action.get("message"),
            "responseParts": [],
            "usage": None,
        }
        if action.get("parentTurnId"):
            started["parentTurnId"] = action["parentTurnId"]
        state["activeTurn"] = started
        queued = action.get("queuedMessageId")
        if queued:
            steering = state.get("steeringMessage")
            if steering and steering.get("id") == queued:
                state.pop("steeringMessage", None)
            queue = [m for m in state.get("queuedMessages") or [] if m.get("id") != queued]
            if queue:
                state["queuedMessages"] = queue
            else:
                state.pop("queuedMessages", None)
        state.pop("isRead", None)
        state["status"] = tool_calls.summary_status(state) & ~tool_calls.IS_READ
        state["modifiedAt"] = now()
    elif kind == "chat/delta":
        parts = _turn_parts(state, turn_id)
        for part in parts or []:
            if part.get("id") == action.get("partId") and part.get("kind") == "markdown":
                part["content"] = part.get("content", "") + action.get("content", "")
                break
    elif kind == "chat/reasoning":
        parts = _turn_parts(state, turn_id)
        for part in parts or []:
            if part.get("id") == action.get("partId") and part.get("kind") == "reasoning":
                part["content"] = part.get("content", "") + action.get("content", "")
                break
    elif kind == "chat/responsePart":
        parts = _turn_parts(state, turn_id)
        if parts is not None:
            parts.append(copy.deepcopy(action["part"]))
    elif tool_calls.handles(kind):
        tool_calls.apply(state, action, now)
    elif kind == "chat/usage":
        active = state.get("activeTurn")
        if active and active.get("id") == turn_id:
            active["usage"] = action.get("usage")
    elif kind == "chat/turnComplete":
        _end_turn(state, action, "complete", now())
    elif kind == "chat/turnCancelled":
        _end_turn(state, action, "cancelled", now())
    elif kind == "chat/error":
        _end_turn(state, action, "error", now())
    elif kind == "chat/turnsLoaded":
        loaded = action.get("turns") or {}
        items = loaded.values() if isinstance(loaded, dict) else loaded
        turns = state.get("turns")
        if isinstance(turns, list):
            turns = {t["id"]: t for t in turns}
        turns = dict(turns or {})
        for turn in items:
            turns[turn["id"]] = copy.deepcopy(turn)
        state["turns"] = turns
        if "turnsNextCursor" in action:
            state["turnsNextCursor"] = action["turnsNextCursor"]
        elif any(not t.get("parentTurnId") for t in items) and isinstance(loaded, dict):
            # The selected path reaches a root-level turn: nothing older to page.
            path = selected_path(state)
            if path and not turns[path[0]].get("parentTurnId"):
                state.pop("turnsNextCursor", None)
    elif kind == "chat/historyCheckedOut":
        if action.get("headTurnId"):
            state["headTurnId"] = action["headTurnId"]
        else:
            state.pop("headTurnId", None)
    elif kind == "chat/turnsPruned":
        turns = dict(state.get("turns") or {})
        for pruned in action.get("turnIds") or []:
            turns.pop(pruned, None)
        state["turns"] = turns
    elif kind == "chat/titleChanged" or kind == "session/titleChanged":
        state["title"] = action.get("title", state.get("title"))
    elif kind == "chat/activityChanged":
        if action.get("activity"):
            state["activity"] = action["activity"]
        else:
            state.pop("activity", None)
    elif kind == "chat/draftChanged":
        if action.get("draft"):
            state["draft"] = action["draft"]
        else:
            state.pop("draft", None)
    elif kind == "chat/pendingMessageSet":
        _pending(state, action)
    elif kind == "chat/pendingMessageRemoved":
        _pending_removed(state, action)
    elif kind == "chat/queuedMessagesReordered":
        queue = list(state.get("queuedMessages") or [])
        if queue:
            by_id = {m.get("id"): m for m in queue}
            order = [by_id[i] for i in action.get("order") or [] if i in by_id]
            rest = [m for m in queue if m not in order]
            state["queuedMessages"] = order + rest
    elif kind == "chat/workingDirectorySet":
        dirs = list(state.get("workingDirectories") or [])
        if action.get("directory") not in dirs:
            dirs.append(action.get("directory"))
        state["workingDirectories"] = dirs
    elif kind == "chat/workingDirectoryRemoved" and state.get("workingDirectories") is not None:
        state["workingDirectories"] = [
            d for d in state["workingDirectories"] if d != action.get("directory")
        ]
    return state
