"""JSON-RPC framing shared by the AHP modules: error codes, the error type, channel
URIs and the checks on request params."""

from __future__ import annotations

import uuid
from typing import Any

from haico.errors import ERROR_TABLE, CheckoutWouldDiscardChanges, DomainError

Json = dict[str, Any]

ROOT = "ahp-root://"
SLOW_CONSUMER = 4008  # close code: the client did not read its messages in time
TOO_BIG = 1009  # close code: a frame over `HAICO_AHP_MAX_FRAME_BYTES`
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL = -32603
RATE_LIMITED = -32000
UNSUPPORTED_VERSION = -32005
PERMISSION_DENIED = -32009


class RpcError(Exception):
    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def rpc_error(exc: DomainError) -> RpcError:
    """A domain error as the JSON-RPC error the shared error table names."""
    code = ERROR_TABLE.get(exc.code, (500, INTERNAL))[1]
    if isinstance(exc, CheckoutWouldDiscardChanges):
        # The extension fixes the top-level message; the host's own words go in data.
        return RpcError(code, "Checkout would discard changes", {"message": exc.message})
    return RpcError(code, exc.message, exc.data or None)


def family_of(channel: Any, scheme: str) -> str:
    """`ahp-chat:/<uuid>` → its root thread id `th_<hex>` (-32602 when malformed)."""
    prefix = f"{scheme}:/"
    if not isinstance(channel, str) or not channel.startswith(prefix):
        raise RpcError(INVALID_PARAMS, f"channel: expected a {scheme}:/<uuid> URI")
    try:
        return "th_" + uuid.UUID(channel[len(prefix) :]).hex
    except ValueError as exc:
        raise RpcError(INVALID_PARAMS, f"channel: {channel!r} has no valid uuid") from exc


# A session's annotations channel (AHP 1.0.0): the research ledger's notes.
ANNOTATIONS = "/annotations"


def channel_root(channel: Any) -> str:
    """The family a chat, session or annotations channel names."""
    if isinstance(channel, str) and channel.startswith("ahp-chat:"):
        return family_of(channel, "ahp-chat")
    if isinstance(channel, str) and channel.startswith("ahp-session:"):
        return family_of(channel.removesuffix(ANNOTATIONS), "ahp-session")
    raise RpcError(INVALID_PARAMS, f"channel: unknown channel {channel!r}")


def chat_uri(root_thread_id: str) -> str:
    return f"ahp-chat:/{uuid.UUID(hex=root_thread_id.removeprefix('th_'))}"


def session_uri(root_thread_id: str) -> str:
    return f"ahp-session:/{uuid.UUID(hex=root_thread_id.removeprefix('th_'))}"


def iso(stamp: Any) -> str:
    return str(stamp.isoformat())


def params_of(msg: Json) -> Json:
    params = msg.get("params", {})
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(INVALID_PARAMS, "params: expected an object")
    return params


def opt_str(params: Json, key: str) -> str | None:
    value = params.get(key)
    if value is not None and not isinstance(value, str):
        raise RpcError(INVALID_PARAMS, f"{key}: expected a string")
    return value


def action_message(envelope: Json) -> Json:
    return {"jsonrpc": "2.0", "method": "action", "params": envelope}


def notification(method: str, params: Json) -> Json:
    return {"jsonrpc": "2.0", "method": method, "params": params}
