"""A restored draft points at its snapshot's stored document body instead of copying it."""

from __future__ import annotations

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.db.models import Document, DocumentBody
from tests.helpers import db_of
from tests.sse_client import send_turn

LONG = "A long paragraph. " * 2000  # ~36 KB


async def test_draft_document_is_shared_until_edited(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = (await client.post("/api/conversations", json={})).json()["thread_id"]
    await client.put(f"/api/conversations/{tid}/document", json={"title": "D", "content": LONG})
    await send_turn(client, tid, "objective: one")  # snapshot 1 stores LONG
    await client.put(f"/api/conversations/{tid}/document", json={"content": "short"})
    await send_turn(client, tid, "objective: two")  # snapshot 2 stores "short"
    await send_turn(client, tid, "objective: three")

    async def bodies() -> int:
        async with db_of(app).read() as s:
            return int(await s.scalar(select(func.count()).select_from(DocumentBody)) or 0)

    before = await bodies()
    r = await client.post(f"/api/conversations/{tid}/checkout", json={"turn_id": f"{tid}:1"})
    draft = r.json()["working_thread_id"]
    async with db_of(app).read() as s:
        doc = (await s.execute(select(Document).where(Document.thread_id == draft))).scalar_one()
    assert doc.body_hash is not None and doc.content == ""  # a reference, not a copy
    ws = (await client.get(f"/api/conversations/{draft}/workspace")).json()
    assert ws["document"] == {"title": "D", "content": "short"}  # after turn 1 = snapshot 2

    r = await client.post(f"/api/conversations/{tid}/checkout", json={"turn_id": None})
    base = r.json()["working_thread_id"]
    ws = (await client.get(f"/api/conversations/{base}/workspace")).json()
    assert ws["document"] == {"title": "D", "content": LONG}  # baseline = snapshot 1

    # Sending on the draft appends to the referenced body; the snapshot reuses the hash.
    _, events, _ = await send_turn(client, base, "write: one more line")
    assert events[-1][0] == "turn_completed"
    ws = (await client.get(f"/api/conversations/{base}/workspace")).json()
    assert ws["document"]["content"] == LONG.rstrip() + "\n\none more line"
    as_of = (await client.get(f"/api/conversations/{base}/workspace?as_of_turn=0")).json()
    assert as_of["document"]["content"] == LONG
    assert await bodies() == before  # no new stored version until the next snapshot
    await send_turn(client, base, "objective: next")
    assert await bodies() == before + 1
