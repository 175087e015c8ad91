"""A document body is stored once per text: a Database remembers the bodies it has
committed and leaves their writes out, on both databases. Only committed bodies are
remembered: a transaction that failed after writing one leaves it for the next write."""

from __future__ import annotations

import hashlib

import httpx
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.db.faults import Step
from haico.db.models import DocumentBody
from tests.helpers import armed_faults, db_of, recorded_sql
from tests.history_helpers import new_thread, turn_ok, workspace
from tests.merge.test_merge_api import branch, merge, merged

API = "/api/conversations"


def _text(tid: str) -> str:
    """A text no other test stores (PostgreSQL's test database is shared)."""
    return f"## Findings of {tid}\n" + "a line of the shared draft\n" * 400


def _stores_a_body(statements: list[str]) -> bool:
    return any("INSERT INTO document_bodies" in sql for sql in statements)


async def _bodies(app: FastAPI, text: str) -> int:
    digest = hashlib.sha256(text.encode()).hexdigest()
    async with db_of(app).read() as s:
        found = await s.scalar(
            select(func.count()).select_from(DocumentBody).where(DocumentBody.hash == digest)
        )
    return int(found or 0)


async def test_an_unedited_document_is_not_stored_again_at_each_turn(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await new_thread(client)
    text = _text(tid)
    put = await client.put(f"{API}/{tid}/document", json={"content": text})
    assert put.status_code == 200, put.text
    with recorded_sql(db_of(app)) as first:
        await turn_ok(client, tid, "objective: read it")
    with recorded_sql(db_of(app)) as second:
        await turn_ok(client, tid, "todo: summarise it")
    assert _stores_a_body(first) and not _stores_a_body(second)
    assert await _bodies(app, text) == 1
    # Both nodes read back with the document (node 2's snapshot names the stored body).
    for node in (1, 2):
        ws = await workspace(client, tid, node)
        assert ws["document"]["content"] == text


async def test_a_body_from_a_failed_merge_is_stored_by_the_next_one(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    root = await new_thread(client)
    text = _text(root)
    await turn_ok(client, root, "objective: write")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "todo: draft")
    # The side's text is new at its tip: the merge stores it as the source's body.
    put = await client.put(f"{API}/{side}/document", json={"content": text})
    assert put.status_code == 200, put.text
    assert await _bodies(app, text) == 0
    with armed_faults(db_of(app), "fail") as armed:
        armed["fail"] = Step.MERGE_HEAD
        failed = await merge(client, root, f"{side}:2")
    assert failed.status_code == 500 and Step.MERGE_HEAD in armed["seen"]
    assert await _bodies(app, text) == 0
    with recorded_sql(db_of(app)) as statements:
        out = await merged(client, root, f"{side}:2")
    assert _stores_a_body(statements)
    assert await _bodies(app, text) == 1
    ws = await workspace(client, root)
    assert ws["document"]["content"] == text and out["node_id"] == f"{root}:2"
