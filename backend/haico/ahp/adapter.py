"""The one place where the wire shapes depend on the agreed protocol version.

The host works in one canonical shape (1.0.0 with the "Chats as a DAG" extension);
`Adapter` turns logged actions into canonical ones and canonical values into the
shapes of the connection's version: from 0.9.0 on a turn's error is an error part at
the end of `responseParts` and `chat/error` carries `part`; 0.7.x gets `Turn.error`,
`chat/error.error` and the `creationFailed` lifecycle. The DAG extension (turns keyed
by id, `headTurnId`, `parentTurnId`, `chat/turnsLoaded` as a record,
`chat/historyCheckedOut`, `chat/turnsPruned`) is the same in both.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from haico.ahp.reducer import reduce_chat
from haico.domain import AUTHOR_META, MERGED_FROM_META, REVERTS_META, NodeKind, NodeState

SUPPORTED = ("1.0.0", "0.9.0", "0.7.0")
_SEMVER = re.compile(
    r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$"
)

Json = dict[str, Any]


class BadVersion(ValueError):
    pass


def _parse(version: str) -> tuple[int, int, int]:
    m = _SEMVER.match(version) if isinstance(version, str) else None
    if m is None:
        raise BadVersion(f"protocolVersions: {version!r} is not a version")
    return int(m.group(1)), int(m.group(2)), int(m.group(3))


def caret_match(offered: str, baseline: str) -> bool:
    o, b = _parse(offered), _parse(baseline)
    if o[0] != b[0] or o < b:
        return False
    return b[0] != 0 or o[1] == b[1]


def negotiate(offered: list[str]) -> str | None:
    """The highest offered version caret-compatible with a supported one, as offered."""
    best: tuple[tuple[int, int, int], str] | None = None
    for version in offered:
        parsed = _parse(version)
        if any(caret_match(version, b) for b in SUPPORTED) and (best is None or parsed > best[0]):
            best = (parsed, version)
    return best[1] if best else None


def canonical(action: Json) -> Json:
    """A logged chat action in the canonical wire shape."""
    kind = action.get("type")
    if kind == "chat/turnStarted":
        out = copy.deepcopy(action)
        out["message"] = {"origin": {"kind": "user"}, **(action.get("message") or {})}
        return out
    if kind == "chat/responsePart" and action.get("part", {}).get("kind") == "toolCall":
        out = copy.deepcopy(action)
        call = out["part"]["toolCall"]
        if not isinstance(call.get("toolInput", ""), str):  # the wire carries it as text
            call["toolInput"] = json.dumps(call["toolInput"], sort_keys=True)
        if call.get("status") == "running":
            call["status"] = "completed"
            call["success"] = True
            call["pastTenseMessage"] = call.get("invocationMessage") or call.get("toolName", "")
        return out
    if kind == "chat/error" and "error" in action:
        out = {k: v for k, v in action.items() if k != "error"}
        out["part"] = {"kind": "error", "error": action["error"]}
        return out
    return action


def turn_from(record: Any, actions: list[Json]) -> Json:
    """A wire Turn (or ActiveTurn, for a running record) from a node record and the
    actions the log still holds for it (reduced exactly as a client would)."""
    started = [a for a in actions if a.get("type") == "chat/turnStarted"]
    if started:
        state: Json = {"turns": {}}
        for action in actions:
            state = reduce_chat(state, canonical(action), now=lambda: "")
        turn = state["turns"].get(record.id) or state.get("activeTurn")
        if turn is not None:
            cleaned: Json = _clean(turn)
            return cleaned
    turn = {
        "id": record.id,
        "startedAt": record.started_at.isoformat(),
        "message": _message(record),
        "responseParts": (
            [{"kind": "markdown", "id": f"{record.id}:md", "content": record.reply}]
            if record.reply
            else []
        ),
    }
    if record.parent_id:
        turn["parentTurnId"] = record.parent_id
    if getattr(record, "usage", None):
        turn["usage"] = record.usage
    if record.state != NodeState.RUNNING:
        turn["state"] = record.state
        if record.completed_at is not None:
            turn["duration"] = max(
                0, int((record.completed_at - record.started_at).total_seconds() * 1000)
            )
        if record.state == NodeState.ERROR:
            turn["responseParts"].append(
                {"kind": "error", "error": {"errorType": "error", "message": "the turn failed"}}
            )
    return turn


def _message(record: Any) -> Json:
    """A node record's message: the user's, or a merge node's system notification."""
    merged_from = getattr(record, "merged_from", None)
    author = getattr(record, "author", None)
    meta = {AUTHOR_META: author} if author is not None else {}
    if merged_from is None:
        message: Json = {"text": record.user_message, "origin": {"kind": "user"}}
        return {**message, "_meta": meta} if meta else message
    # A revert node names the merge node it undid.
    key = REVERTS_META if getattr(record, "kind", None) == NodeKind.REVERT else MERGED_FROM_META
    return {
        "text": record.user_message,
        "origin": {"kind": "systemNotification"},
        "_meta": {**meta, key: merged_from},
    }


def _clean(value: Any) -> Any:
    """Drop null members (JSON null means absent on the wire)."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


class Adapter:
    def __init__(self, version: str) -> None:
        self.version = version
        self.current = not caret_match(version, "0.7.0")

    def turn(self, turn: Json) -> Json:
        if self.current:
            return turn
        parts = list(turn.get("responseParts") or [])
        out = dict(turn)
        if parts and parts[-1].get("kind") == "error":
            out["error"] = parts.pop()["error"]
        out["responseParts"] = parts
        return out

    def action(self, action: Json) -> Json:
        """A canonical action in this connection's shape."""
        kind = action.get("type")
        if self.current:
            return action
        if kind == "chat/error" and "part" in action:
            out = {k: v for k, v in action.items() if k != "part"}
            out["error"] = action["part"]["error"]
            return out
        if kind == "chat/turnsLoaded":
            out = dict(action)
            out["turns"] = {k: self.turn(v) for k, v in action["turns"].items()}
            return out
        return action

    def chat_state(self, state: Json) -> Json:
        if self.current:
            return state
        out = dict(state)
        out["turns"] = {k: self.turn(v) for k, v in state["turns"].items()}
        return out

    def session_summary(self, summary: Json, chats: list[Json], default_chat: str) -> Json:
        if not self.current:
            return summary
        return {**summary, "chats": chats, "defaultChat": default_chat}
