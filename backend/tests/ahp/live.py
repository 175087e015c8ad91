"""Helpers for AHP tests against the in-process app served on a real socket
(`live_server`), so a test can reach the database and the REST face directly."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.ahp.wire import AhpClient

Json = dict[str, Any]


def chat_of(thread_id: str) -> str:
    return f"ahp-chat:/{uuid.UUID(hex=thread_id.removeprefix('th_'))}"


def session_of(thread_id: str) -> str:
    return f"ahp-session:/{uuid.UUID(hex=thread_id.removeprefix('th_'))}"


async def until(check: Callable[[], Any], *, within: float = 15, what: str = "") -> Any:
    """Poll `check` until it returns something truthy."""
    deadline = time.monotonic() + within
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what or check}"
        await asyncio.sleep(0.05)


def notified(client: AhpClient, method: str, pred: Callable[[Json], bool]) -> Callable[[], Any]:
    return lambda: next(
        (n for n in client.notifications if n["method"] == method and pred(n["params"])), None
    )


async def connected(base: str, *channels: str, version: str = "1.0.0") -> AhpClient:
    """A client that initialized and subscribed to `channels`."""
    client = await AhpClient.open(base)
    await client.initialize([version])
    for channel in channels:
        await client.request("subscribe", {"channel": channel})
    return client


async def send(client: AhpClient, chat: str, text: str, seq: int) -> str:
    """Dispatch a turn and wait for it to end; the host's turn id."""
    await client.notify(
        "dispatchAction",
        {
            "channel": chat,
            "clientSeq": seq,
            "action": {
                "type": "chat/turnStarted",
                "turnId": f"client-{seq}",
                "startedAt": "2024-01-01T00:00:00Z",
                "message": {"text": text, "origin": {"kind": "user"}},
            },
        },
    )
    started = await client.wait_for(lambda e: e.get("origin", {}).get("clientSeq") == seq)
    assert "rejectionReason" not in started, started
    turn_id: str = started["action"]["turnId"]
    await client.wait_for(
        lambda e: (
            e["action"]["type"] in ("chat/turnComplete", "chat/error")
            and e["action"].get("turnId") == turn_id
        )
    )
    return turn_id
