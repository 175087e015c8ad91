"""The one error the client raises for an answer the server refused."""

from __future__ import annotations

import json
from typing import Any

import httpx


class HaicoError(Exception):
    """The server answered with an error: `code` and `message` come from its error body
    (`{"code", "message", "data"?}`), `status` is the HTTP status (200 for an `error`
    event that ended a turn's stream). `data` carries what some errors add (a merge
    conflict's plan)."""

    def __init__(
        self, code: str, message: str, status: int, data: dict[str, Any] | None = None
    ) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.code = code
        self.message = message
        self.status = status
        self.data = data

    @classmethod
    def from_response(cls, response: httpx.Response) -> HaicoError:
        """From an error answer; a body that is not HAICO's error shape (a proxy's
        page, say) becomes `http_<status>` with the body's start as the message."""
        try:
            body = json.loads(response.content)
        except ValueError:
            body = None
        if isinstance(body, dict) and isinstance(body.get("code"), str):
            data = body.get("data")
            return cls(
                body["code"],
                str(body.get("message", "")),
                response.status_code,
                data if isinstance(data, dict) else None,
            )
        text = response.text.strip()[:200] or response.reason_phrase
        return cls(f"http_{response.status_code}", text, response.status_code)
