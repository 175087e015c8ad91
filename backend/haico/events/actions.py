"""Typed builders for every action the app logs: one vocabulary for all faces.

The chat actions follow AHP's shapes (with the "Chats as a DAG" extension); the
`haico/*` actions are the project's own, with JSON Schemas beside the other schemas.
"""

from __future__ import annotations

from typing import Any

from haico.domain import AUTHOR_META, NodeState

Action = dict[str, Any]


def turn_started(
    turn_id: str,
    *,
    parent_turn_id: str | None,
    text: str,
    started_at: str,
    author: str | None = None,
) -> Action:
    """A turn (or a merge node) starts; `author`: the grantee who sent it, named in the
    message's `_meta` (AHP's shapes keep; absent for the owner)."""
    action: Action = {
        "type": "chat/turnStarted",
        "turnId": turn_id,
        "startedAt": started_at,
        "message": {"text": text},
    }
    if author is not None:
        action["message"]["_meta"] = {AUTHOR_META: author}
    if parent_turn_id:
        action["parentTurnId"] = parent_turn_id
    return action


def response_part(turn_id: str, part_id: str) -> Action:
    return {
        "type": "chat/responsePart",
        "turnId": turn_id,
        "part": {"kind": "markdown", "id": part_id, "content": ""},
    }


def tool_call(turn_id: str, *, call_id: str, name: str, args: dict[str, Any]) -> Action:
    """A tool call the agent made, as a running tool-call response part."""
    return {
        "type": "chat/responsePart",
        "turnId": turn_id,
        "part": {
            "kind": "toolCall",
            "toolCall": {
                "toolCallId": call_id,
                "toolName": name,
                "displayName": name.replace("_", " "),
                "invocationMessage": name.replace("_", " "),
                "confirmed": "not-needed",
                "status": "running",
                "toolInput": args,
            },
        },
    }


def delta(turn_id: str, part_id: str, content: str) -> Action:
    return {"type": "chat/delta", "turnId": turn_id, "partId": part_id, "content": content}


def turn_ended(
    turn_id: str, *, state: NodeState, duration_ms: int, code: str = "error", message: str = ""
) -> Action:
    """How a turn ended: complete, cancelled, or an error with its code and message."""
    if state == NodeState.COMPLETE:
        return {"type": "chat/turnComplete", "turnId": turn_id, "duration": duration_ms}
    if state == NodeState.CANCELLED:
        return {"type": "chat/turnCancelled", "turnId": turn_id, "duration": duration_ms}
    return {
        "type": "chat/error",
        "turnId": turn_id,
        "duration": duration_ms,
        "error": {"errorType": code, "message": message or "the turn failed"},
    }


def usage(turn_id: str, provenance: dict[str, Any]) -> Action | None:
    """AHP's `chat/usage` for a turn's provenance (None when no tokens were counted)."""
    if provenance.get("input_tokens") is None and provenance.get("output_tokens") is None:
        return None
    info: dict[str, Any] = {
        "inputTokens": provenance.get("input_tokens") or 0,
        "outputTokens": provenance.get("output_tokens") or 0,
    }
    if provenance.get("model"):
        info["model"] = provenance["model"]
    info["_meta"] = {
        "haico/provider": provenance.get("provider"),
        "haico/tokensEstimated": bool(provenance.get("tokens_estimated")),
        "haico/costUsd": provenance.get("cost_usd"),
    }
    return {"type": "chat/usage", "turnId": turn_id, "usage": info}


def turns_loaded(turn_ids: list[str]) -> Action:
    return {"type": "chat/turnsLoaded", "turns": [{"id": t} for t in turn_ids]}


def history_checked_out(head_turn_id: str | None, *, author: str | None = None) -> Action:
    """The head moved; `author`: the grantee who moved it, in the action's `_meta`."""
    action: Action = {"type": "chat/historyCheckedOut"}
    if head_turn_id is not None:
        action["headTurnId"] = head_turn_id
    if author is not None:
        action["_meta"] = {AUTHOR_META: author}
    return action


def turns_pruned(turn_ids: list[str]) -> Action:
    return {"type": "chat/turnsPruned", "turnIds": turn_ids}


def workspace_changed(
    thread_id: str, surface: str, change: str, item: dict[str, Any] | None = None
) -> Action:
    """A live workspace edit of one thread, by anyone (REST, the agent's tools, AHP).

    `change` is `set` (objective, document), `added`, `updated` or `removed`; `item`
    carries the new value (for a removal, its `id` and `uid`), so a follower can apply
    it without refetching. Schema: `events/schemas/haico-workspaceChanged.schema.json`.
    """
    action: Action = {
        "type": "haico/workspaceChanged",
        "threadId": thread_id,
        "surfaces": [surface],
        "change": change,
    }
    if item is not None:
        action["item"] = item
    return action


def thread_changed(thread_id: str, change: str, **extra: Any) -> Action:
    """A thread of the family was created, renamed or deleted (the session's catalogue)."""
    return {"type": "haico/threadChanged", "threadId": thread_id, "change": change, **extra}


def turn_sse_event(action: Action, *, reply: str = "") -> tuple[str, dict[str, Any]] | None:
    """The documented event of `POST …/turns` that a turn's action stands for, if any.

    One vocabulary: the turn stream is these actions, renamed. Streamed text reaches
    it token by token (`chat/delta`); the log keeps the same deltas coalesced.
    """
    kind = action.get("type")
    turn_id = str(action.get("turnId", ""))
    if kind == "chat/turnStarted":
        _, _, k = turn_id.rpartition(":")
        data = {"turn_index": int(k), "node_id": turn_id}
        return "turn_started", {**data, "parent_node_id": action.get("parentTurnId")}
    if kind == "chat/delta":
        return "token", {"text": action.get("content", "")}
    if kind == "chat/responsePart" and action["part"].get("kind") == "toolCall":
        call = action["part"]["toolCall"]
        return "tool_call", {"name": call["toolName"], "args": call.get("toolInput", {})}
    if kind == "haico/workspaceChanged":
        return "workspace_changed", {"surfaces": list(action.get("surfaces", []))}
    if kind == "chat/turnComplete":
        _, _, k = turn_id.rpartition(":")
        return "turn_completed", {"turn_index": int(k), "node_id": turn_id, "reply": reply}
    if kind == "chat/turnCancelled":
        return "error", {"code": "turn_cancelled", "message": "the turn was cancelled"}
    if kind == "chat/error":
        error = action.get("error", {})
        return "error", {"code": error.get("errorType", "error"), "message": error.get("message")}
    return None


def ends_turn(action: Action) -> bool:
    return action.get("type") in ("chat/turnComplete", "chat/turnCancelled", "chat/error")
