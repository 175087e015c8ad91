"""What one thread may hold is configurable and enforced on every write path: REST,
the agent's tools and the turn itself. Over a limit the write answers 422 with a
message that says which limit, and nothing is written."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.sse_client import parse_sse

ITEMS, DOC, MESSAGE = 3, 50, 60


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {
        "max_items": ITEMS,
        "max_document_chars": DOC,
        "max_message_chars": MESSAGE,
        "max_body_bytes": 1024,
        "max_import_bytes": 4096,
    }


async def _new(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={})
    return str(r.json()["thread_id"])


@pytest.mark.parametrize("surface", ["preferences", "todos"])
async def test_items_per_thread(client: httpx.AsyncClient, surface: str) -> None:
    tid = await _new(client)
    made = [
        await client.post(f"/api/conversations/{tid}/{surface}", json={"text": f"i{n}"})
        for n in range(ITEMS)
    ]
    assert all(r.status_code == 201 for r in made)
    over = await client.post(f"/api/conversations/{tid}/{surface}", json={"text": "one too many"})
    assert over.status_code == 422, over.text
    assert over.json()["code"] == "invalid_input" and f"at most {ITEMS}" in over.json()["message"]
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert len(ws[surface]) == ITEMS
    # Removing one makes room (a rejected decision does not count).
    first = made[0].json()["id"]
    assert (await client.delete(f"/api/conversations/{tid}/{surface}/{first}")).status_code == 204
    again = await client.post(f"/api/conversations/{tid}/{surface}", json={"text": "fits now"})
    assert again.status_code == 201, again.text


async def test_document_size(client: httpx.AsyncClient) -> None:
    tid = await _new(client)
    ok = await client.put(f"/api/conversations/{tid}/document", json={"content": "x" * DOC})
    assert ok.status_code == 200, ok.text
    over = await client.put(f"/api/conversations/{tid}/document", json={"content": "y" * (DOC + 1)})
    assert over.status_code == 422 and "document" in over.json()["message"]
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert ws["document"]["content"] == "x" * DOC


async def test_message_length(client: httpx.AsyncClient) -> None:
    tid = await _new(client)
    over = await client.post(
        f"/api/conversations/{tid}/turns", json={"content": "z" * (MESSAGE + 1)}
    )
    assert over.status_code == 422 and f"at most {MESSAGE}" in over.json()["message"]
    conv = (await client.get(f"/api/conversations/{tid}")).json()
    assert conv["turn_index"] == 0  # no turn was opened


async def test_the_agent_is_held_to_the_same_limits(client: httpx.AsyncClient) -> None:
    """The agent's tool calls go through the same writes: the fourth todo fails as a
    tool call, the turn still ends, and the thread holds three."""
    tid = await _new(client)
    r = await client.post(
        f"/api/conversations/{tid}/turns", json={"content": "todo: a; todo: b; todo: c; todo: d"}
    )
    events = parse_sse(r.text)
    assert events[-1][0] in ("turn_completed", "error"), events[-1]
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert [t["text"] for t in ws["todos"]] == ["a", "b", "c"]
    r = await client.post(f"/api/conversations/{tid}/turns", json={"content": "write: " + "w" * 55})
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert ws["document"] is None or len(ws["document"]["content"]) <= DOC
    # The family is not stuck: another turn runs.
    r = await client.post(f"/api/conversations/{tid}/turns", json={"content": "objective: go on"})
    assert parse_sse(r.text)[-1][0] == "turn_completed"


async def test_request_bodies_and_the_import_limit(client: httpx.AsyncClient) -> None:
    """Bodies are capped before they are read: 1 KiB here for ordinary requests, the
    import its own 4 KiB."""
    tid = await _new(client)
    big = {"content": "d" * 2000}
    r = await client.put(f"/api/conversations/{tid}/document", json=big)
    assert r.status_code == 413 and r.json()["code"] == "payload_too_large"
    # 2 KB reaches the import (and is refused as a document, not for its size) ...
    r = await client.post("/api/conversations/import", json={"padding": "p" * 2000})
    assert r.status_code == 422, r.text
    # ... 5 KB does not.
    r = await client.post("/api/conversations/import", json={"padding": "p" * 5000})
    assert r.status_code == 413 and "4096" in r.json()["message"]
    assert len((await client.get("/api/conversations")).json()) == 1
