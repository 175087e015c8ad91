"""Codings on AHP 1.0.0, on both databases: the session's annotations channel holds the
family's codings beside its notes, in its snapshot and live, every message valid
against the 1.0.0 schemas."""

from __future__ import annotations

from fastapi import FastAPI
from httpx import AsyncClient

from tests.ahp.live import connected, session_of
from tests.history_helpers import live_server, new_thread, turn_ok


async def test_codings_are_annotations_of_the_session(app: FastAPI, client: AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    book = (
        await client.post("/api/codebooks", json={"name": "b", "codes": [{"name": "c"}]})
    ).json()
    code_id = book["codes"][0]["id"]
    body = {"code_id": code_id, "span": {"field": "user_message", "start": 0, "end": 9}}
    first = (await client.post(f"/api/conversations/{tid}/nodes/1/codings", json=body)).json()
    await client.post(f"/api/conversations/{tid}/nodes/1/notes", json={"text": "a note"})
    channel = session_of(tid) + "/annotations"
    async with live_server(app) as base:
        c = await connected(base)
        snap = (await c.request("subscribe", {"channel": channel}))["snapshot"]
        ids = {a["id"]: a for a in snap["state"]["annotations"]}
        assert set(ids) == {f"coding-{first['id']}"} | {i for i in ids if i.startswith("note-")}
        coding = ids[f"coding-{first['id']}"]
        assert coding["origin"]["turnId"] == f"{tid}:1"
        meta = coding["entries"][0]["_meta"]
        assert meta["haico/codeId"] == code_id
        assert meta["haico/span"] == {"field": "user_message", "start": 0, "end": 9}

        second = (
            await client.post(
                f"/api/conversations/{tid}/nodes/2/codings", json={"code_id": code_id, "memo": "m"}
            )
        ).json()
        added = await c.wait_for(
            lambda e: (
                e["action"]["type"] == "annotations/set"
                and e["action"]["annotation"]["id"] == f"coding-{second['id']}"
            )
        )
        assert added["channel"] == channel
        assert added["action"]["annotation"]["entries"][0]["text"] == "m"
        await client.delete(f"/api/codings/{second['id']}")
        removed = await c.wait_for(lambda e: e["action"]["type"] == "annotations/removed")
        assert removed["action"]["annotationId"] == f"coding-{second['id']}"
        assert not c.invalid
        await c.close()
