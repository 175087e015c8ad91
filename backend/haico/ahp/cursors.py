"""Opaque, self-contained `fetchTurns` cursors, signed so that any process accepts
them (`HAICO_SECRET_KEY`) and a forged or foreign one is refused (-32602)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from typing import Any


class BadCursor(Exception):
    pass


def sign(key: bytes, payload: dict[str, Any]) -> str:
    body = json.dumps(payload, separators=(",", ":"), sort_keys=True).encode()
    mac = hmac.new(key, body, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(body + mac).decode().rstrip("=")


def open_cursor(key: bytes, cursor: str) -> dict[str, Any]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
    except (ValueError, TypeError) as exc:
        raise BadCursor("cursor: not a cursor this host issued") from exc
    body, mac = raw[:-16], raw[-16:]
    if len(raw) <= 16 or not hmac.compare_digest(
        mac, hmac.new(key, body, hashlib.sha256).digest()[:16]
    ):
        raise BadCursor("cursor: not a cursor this host issued")
    payload: dict[str, Any] = json.loads(body)
    return payload
