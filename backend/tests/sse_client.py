"""A tiny SSE reader for tests."""

from __future__ import annotations

import json
from typing import Any

import httpx


def parse_sse(text: str) -> list[tuple[str, Any]]:
    events: list[tuple[str, Any]] = []
    for block in text.split("\n\n"):
        name, data = "message", []
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].strip())
        if data:
            events.append((name, json.loads("\n".join(data))))
    return events


async def send_turn(
    client: httpx.AsyncClient, thread_id: str, content: str, **params: Any
) -> tuple[int, list[tuple[str, Any]], Any]:
    """POST a turn; return (status, SSE events, JSON body when not a stream)."""
    r = await client.post(
        f"/api/conversations/{thread_id}/turns", json={"content": content}, params=params
    )
    if r.headers.get("content-type", "").startswith("text/event-stream"):
        return r.status_code, parse_sse(r.text), None
    return r.status_code, [], r.json()
