"""The parts of a running turn that wait on someone: tool calls and input requests.

Used by `haico.ahp.reducer`. A tool call part moves through its statuses as the host
(or, for client tools, the client) reports progress:

    streaming --ready--> pending-confirmation --confirmed(approved)--> running
        |                       |  ^                                     |
        |                       |  '--------------ready------------------'
        '--ready(confirmed)-----+--------------------------------------> running
    running --complete--> completed | pending-result-confirmation
    pending-result-confirmation --resultConfirmed--> completed | cancelled
    running --authRequired (MCP tools only)--> auth-required --authResolved--> running

An action that does not fit the call's current status, names an unknown call or
another turn changes nothing. Input requests are `inputRequest` parts of the active
turn; one without a `response` is open. While any call waits on a person (a
confirmation, a result review, a sign-in) or a request is open, the chat's status
says "input needed" (24); otherwise it says what the turn is doing.

Every function works in place on a state the caller already copied.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

Json = dict[str, Any]

IDLE, ERROR, IN_PROGRESS, INPUT_NEEDED, IS_READ = 1, 2, 8, 24, 32
_ACTIVITY_BITS = 0b11111  # the mutually exclusive activity values live in bits 0-4
_WAITING = {"pending-confirmation", "pending-result-confirmation", "auth-required"}
_COMMON = ("toolCallId", "toolName", "displayName", "intention", "contributor", "_meta")


# ---- status ----


def _open_request(part: Json) -> bool:
    return part.get("kind") == "inputRequest" and part.get("response") is None


def _waiting_call(part: Json) -> bool:
    return part.get("kind") == "toolCall" and part["toolCall"].get("status") in _WAITING


def summary_status(state: Json, *, failed: bool = False) -> int:
    """The chat's status after a change: the activity bits recomputed, other flags kept."""
    active = state.get("activeTurn")
    parts = (active or {}).get("responseParts") or []
    if failed:
        activity = ERROR
    elif any(_open_request(p) or _waiting_call(p) for p in parts):
        activity = INPUT_NEEDED
    elif active:
        activity = IN_PROGRESS
    else:
        activity = IDLE
    return (int(state.get("status") or 0) & ~_ACTIVITY_BITS) | activity


def refresh_status(state: Json) -> None:
    state["status"] = summary_status(state)


# ---- tool calls ----


def _common(call: Json, meta: Any = None) -> Json:
    out = {k: call.get(k) for k in _COMMON}
    if meta is not None:
        out["_meta"] = meta
    return out


def _with_option(out: Json, option: Any) -> Json:
    if option:
        out["selectedOption"] = option
    return out


def _update_call(state: Json, action: Json, change: Callable[[Json, Json], Json | None]) -> bool:
    """Replace the call `action.toolCallId` of the active turn by `change(call, action)`
    (None: unchanged). True when a call changed."""
    active = state.get("activeTurn")
    if not active or active.get("id") != action.get("turnId"):
        return False
    for part in active.get("responseParts") or []:
        if part.get("kind") == "toolCall" and part["toolCall"].get("toolCallId") == action.get(
            "toolCallId"
        ):
            new = change(part["toolCall"], action)
            if new is None:
                return False
            part["toolCall"] = new
            return True
    return False


def _start(state: Json, action: Json) -> None:
    active = state.get("activeTurn")
    if not active or active.get("id") != action.get("turnId"):
        return
    call = {k: action.get(k) for k in _COMMON}
    call["status"] = "streaming"
    active.setdefault("responseParts", []).append({"kind": "toolCall", "toolCall": call})


def _delta(call: Json, action: Json) -> Json | None:
    if call.get("status") != "streaming":
        return None
    out = dict(call)
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    if action.get("content") is not None:
        out["partialInput"] = (call.get("partialInput") or "") + str(action["content"])
    if action.get("invocationMessage") is not None:
        out["invocationMessage"] = action["invocationMessage"]
    return out


def _ready(call: Json, action: Json) -> Json | None:
    if call.get("status") not in ("streaming", "running", "pending-confirmation"):
        return None
    out = _common(call, action.get("_meta"))
    out["invocationMessage"] = action.get("invocationMessage")
    if action.get("intention") is not None:
        out["intention"] = action["intention"]
    out["contributor"] = _refined_contributor(call.get("contributor"), action.get("contributor"))
    if action.get("confirmed"):
        out.update(status="running", toolInput=action.get("toolInput"))
        out["confirmed"] = action["confirmed"]
        return out
    earlier = call if call.get("status") == "pending-confirmation" else {}
    out["status"] = "pending-confirmation"
    given = action.get("toolInput")
    out["toolInput"] = given if given is not None else call.get("toolInput")
    for key in ("confirmationTitle", "riskAssessment", "edits", "editable"):
        value = action.get(key)
        out[key] = value if value is not None else earlier.get(key)
    options = action.get("options") or earlier.get("options")
    if options:
        out["options"] = options
    return out


def _refined_contributor(known: Any, reported: Any) -> Any:
    """`toolCallReady` may say whose tool it is, but never moves a call to or away from
    a client: a client's call stays that client's, and a host call is not handed to one."""
    if (known or {}).get("kind") == "client" or (reported or {}).get("kind") == "client":
        return known
    return reported if reported is not None else known


def _option(call: Json, option_id: Any) -> Any:
    if not option_id:
        return None
    return next((o for o in call.get("options") or [] if o.get("id") == option_id), None)


def _confirmed(call: Json, action: Json) -> Json | None:
    if call.get("status") != "pending-confirmation":
        return None
    out = _common(call, action.get("_meta"))
    out["invocationMessage"] = call.get("invocationMessage")
    option = _option(call, action.get("selectedOptionId"))
    if action.get("approved"):
        # An edit replaces only input sent inline; input sent by reference stays a
        # reference (the host rewrites the referenced content instead).
        inline = isinstance(call.get("toolInput"), str) and "editedToolInput" in action
        out.update(status="running", confirmed=action.get("confirmed"))
        out["toolInput"] = action["editedToolInput"] if inline else call.get("toolInput")
        return _with_option(out, option)
    out.update(status="cancelled", toolInput=call.get("toolInput"))
    for key in ("reason", "reasonMessage", "userSuggestion"):
        out[key] = action.get(key)
    return _with_option(out, option)


def _complete(call: Json, action: Json) -> Json | None:
    status = call.get("status")
    if status not in ("running", "pending-confirmation", "auth-required"):
        return None
    result = action.get("result") or {}
    if status == "auth-required" and result.get("success"):
        return None  # nothing ran after the sign-in challenge: only a failure ends it
    out = _common(call, action.get("_meta"))
    out.update(invocationMessage=call.get("invocationMessage"), toolInput=call.get("toolInput"))
    ran = status in ("running", "auth-required")
    out["confirmed"] = call.get("confirmed") if ran else "not-needed"
    _with_option(out, call.get("selectedOption") if ran else None)
    if status == "auth-required" and call.get("content"):
        out["content"] = call["content"]
    review = action.get("requiresResultConfirmation") and status != "auth-required"
    out["status"] = "pending-result-confirmation" if review else "completed"
    out.update(result)
    return out


def _result_confirmed(call: Json, action: Json) -> Json | None:
    if call.get("status") != "pending-result-confirmation":
        return None
    out = _common(call, action.get("_meta"))
    out.update(invocationMessage=call.get("invocationMessage"), toolInput=call.get("toolInput"))
    if action.get("approved"):
        out.update(status="completed", confirmed=call.get("confirmed"))
        _with_option(out, call.get("selectedOption"))
        for key in ("success", "pastTenseMessage", "content", "structuredContent", "error"):
            out[key] = call.get(key)
        return out
    out.update(status="cancelled", reason="result-denied")
    return _with_option(out, call.get("selectedOption"))


def _content_changed(call: Json, action: Json) -> Json | None:
    if call.get("status") != "running":
        return None
    out = dict(call)
    if action.get("_meta") is not None:
        out["_meta"] = action["_meta"]
    out["content"] = action.get("content")
    return out


def _paused_or_resumed(call: Json, action: Json, *, pause: bool) -> Json:
    out = _common(call, action.get("_meta"))
    out.update(
        status="auth-required" if pause else "running",
        invocationMessage=call.get("invocationMessage"),
        toolInput=call.get("toolInput"),
        confirmed=call.get("confirmed"),
    )
    _with_option(out, call.get("selectedOption"))
    if call.get("content"):
        out["content"] = call["content"]
    if pause:
        out["auth"] = action.get("auth")
    return out


def _auth_required(call: Json, action: Json) -> Json | None:
    contributor = call.get("contributor") or {}
    if call.get("status") != "running" or contributor.get("kind") != "mcp":
        return None
    return _paused_or_resumed(call, action, pause=True)


def _auth_resolved(call: Json, action: Json) -> Json | None:
    if call.get("status") != "auth-required":
        return None
    return _paused_or_resumed(call, action, pause=False)


# Transitions that may start or end a wait on a person refresh the chat's status.
_TRANSITIONS: dict[str, tuple[Callable[[Json, Json], Json | None], bool]] = {
    "chat/toolCallDelta": (_delta, False),
    "chat/toolCallReady": (_ready, True),
    "chat/toolCallConfirmed": (_confirmed, True),
    "chat/toolCallComplete": (_complete, True),
    "chat/toolCallResultConfirmed": (_result_confirmed, True),
    "chat/toolCallContentChanged": (_content_changed, False),
    "chat/toolCallAuthRequired": (_auth_required, True),
    "chat/toolCallAuthResolved": (_auth_resolved, True),
}


def cancelled_at_turn_end(call: Json) -> Json:
    """A call still unfinished when its turn ends, as the turn records it."""
    out = _common(call)
    streaming = call.get("status") == "streaming"
    out["invocationMessage"] = (
        call.get("invocationMessage") or "" if streaming else call.get("invocationMessage")
    )
    out["toolInput"] = None if streaming else call.get("toolInput")
    out.update(status="cancelled", reason="skipped")
    return out


# ---- input requests ----


def _open_part(state: Json, request_id: Any) -> Json | None:
    active = state.get("activeTurn")
    for part in (active or {}).get("responseParts") or []:
        if _open_request(part) and part["request"].get("id") == request_id:
            found: Json = part
            return found
    return None


def _input_requested(state: Json, action: Json, now: str) -> None:
    active = state.get("activeTurn")
    if not active:
        return
    request = dict(action.get("request") or {})
    existing = _open_part(state, request.get("id"))
    if existing is not None:
        if request.get("answers") is None:
            request["answers"] = existing["request"].get("answers")
        existing["request"] = request
    else:
        active.setdefault("responseParts", []).append({"kind": "inputRequest", "request": request})
    state["status"] = summary_status(state) & ~IS_READ
    state["modifiedAt"] = now


def _answer_changed(state: Json, action: Json, now: str) -> None:
    part = _open_part(state, action.get("requestId"))
    if part is None:
        return
    answers = dict(part["request"].get("answers") or {})
    if action.get("answer") is None:
        answers.pop(action.get("questionId"), None)
    else:
        answers[action.get("questionId")] = action["answer"]
    part["request"] = {**part["request"], "answers": answers or None}
    state["modifiedAt"] = now


def _input_completed(state: Json, action: Json, now: str) -> None:
    part = _open_part(state, action.get("requestId"))
    if part is None:
        return
    answers = {**(part["request"].get("answers") or {}), **(action.get("answers") or {})}
    part["request"] = {**part["request"], "answers": answers or None}
    part["response"] = action.get("response")
    refresh_status(state)
    state["modifiedAt"] = now


_INPUT = {
    "chat/inputRequested": _input_requested,
    "chat/inputAnswerChanged": _answer_changed,
    "chat/inputCompleted": _input_completed,
}


def handles(kind: Any) -> bool:
    return kind == "chat/toolCallStart" or kind in _TRANSITIONS or kind in _INPUT


def apply(state: Json, action: Json, now: Callable[[], str]) -> None:
    """Apply a tool-call or input-request action to `state` (in place)."""
    kind = action.get("type")
    if kind == "chat/toolCallStart":
        _start(state, action)
    elif kind in _TRANSITIONS:
        change, refresh = _TRANSITIONS[kind]
        if _update_call(state, action, change) and refresh:
            refresh_status(state)
    elif kind in _INPUT:
        _INPUT[kind](state, action, now())
