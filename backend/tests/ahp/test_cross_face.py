"""REST and AHP are two faces of one host: what REST changes reaches AHP clients, on
both databases, over a real WebSocket."""

from __future__ import annotations

from fastapi import FastAPI
from httpx import AsyncClient

from tests.ahp.live import chat_of, connected, notified, session_of, until
from tests.history_helpers import live_server, new_thread


async def test_rest_created_and_deleted_families_are_announced_on_the_root(
    app: FastAPI, client: AsyncClient
) -> None:
    async with live_server(app) as base:
        c = await connected(base)
        tid = await new_thread(client)
        session = session_of(tid)
        added = await until(
            notified(c, "root/sessionAdded", lambda p: p["summary"]["resource"] == session),
            what="root/sessionAdded for a REST-created conversation",
        )
        assert added["params"]["summary"]["chats"][0]["resource"] == chat_of(tid)
        r = await client.delete(f"/api/conversations/{tid}")
        assert r.status_code in (200, 204), r.text
        await until(
            notified(c, "root/sessionRemoved", lambda p: p["session"] == session),
            what="root/sessionRemoved for a REST-deleted conversation",
        )
        assert not c.invalid
        await c.close()


async def test_a_rest_workspace_edit_reaches_an_ahp_chat_subscriber(
    app: FastAPI, client: AsyncClient
) -> None:
    tid = await new_thread(client)
    async with live_server(app) as base:
        c = await connected(base, chat_of(tid))
        r = await client.post(f"/api/conversations/{tid}/todos", json={"text": "from REST"})
        assert r.status_code == 201, r.text
        envelope = await c.wait_for(lambda e: e["action"]["type"] == "haico/workspaceChanged")
        assert envelope["channel"] == chat_of(tid)
        assert envelope["action"]["item"]["text"] == "from REST"
        assert not c.invalid  # validated against the project's workspaceChanged schema
        await c.close()
