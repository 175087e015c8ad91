"""A family's notes over AHP 1.0.0: the session's annotations channel, on both
databases, over a real WebSocket (every message validated against the 1.0.0 schemas)."""

from __future__ import annotations

from fastapi import FastAPI
from httpx import AsyncClient

from tests.ahp.live import connected, session_of
from tests.ahp.wire import RpcFailure
from tests.history_helpers import live_server, new_thread, turn_ok


async def test_notes_are_the_sessions_annotations(app: FastAPI, client: AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    r = await client.post(
        f"/api/conversations/{tid}/nodes/1/notes", json={"text": "first", "codes": ["a"]}
    )
    first = r.json()
    channel = session_of(tid) + "/annotations"
    async with live_server(app) as base:
        c = await connected(base)
        snap = (await c.request("subscribe", {"channel": channel}))["snapshot"]
        assert snap["resource"] == channel
        [ann] = snap["state"]["annotations"]
        assert ann["id"] == f"note-{first['id']}" and ann["origin"]["turnId"] == f"{tid}:1"
        assert ann["entries"][0]["text"] == "first" and ann["resolved"] is False

        r = await client.post(f"/api/conversations/{tid}/nodes/2/notes", json={"text": "second"})
        second = r.json()
        added = await c.wait_for(lambda e: e["action"]["type"] == "annotations/set")
        assert added["channel"] == channel
        assert added["action"]["annotation"]["origin"]["turnId"] == f"{tid}:2"
        await client.delete(f"/api/notes/{second['id']}")
        removed = await c.wait_for(lambda e: e["action"]["type"] == "annotations/removed")
        assert removed["action"]["annotationId"] == f"note-{second['id']}"
        assert not c.invalid
        await c.close()

        # 0.7.0 has no annotations channel
        old = await connected(base, version="0.7.0")
        try:
            await old.request("subscribe", {"channel": channel})
            raise AssertionError("a 0.7.0 client subscribed to an annotations channel")
        except RpcFailure as exc:
            assert exc.code == -32602
        await old.close()
