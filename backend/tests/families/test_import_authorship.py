"""An import does not forge authorship: whoever a document names, the importer makes
every node and note of the copy, and the recorded author is kept as
`imported_author` (in the ledger's views, the export, and a copy of the copy); on
both databases."""

from __future__ import annotations

from typing import Any

import httpx
from fastapi import FastAPI

from tests.families.test_research_transfer import _export
from tests.history_helpers import new_thread, turn_ok

API = "/api/conversations"


async def _import(client: httpx.AsyncClient, doc: dict[str, Any]) -> str:
    r = await client.post(f"{API}/import", json=doc)
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def test_the_importer_authors_the_copy(app: FastAPI, client: httpx.AsyncClient) -> None:
    me = app.state.local_user.name
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    r = await client.post(f"{API}/{tid}/nodes/1/notes", json={"text": "mine", "codes": ["c"]})
    assert r.status_code == 201
    doc = await _export(client, tid)
    # A forged document: its first node and its note claim to be alice's.
    doc["nodes"][0]["author"] = "alice"
    doc["nodes"][0]["notes"][0]["author"] = "alice"

    copy = await _import(client, doc)
    node = (await client.get(f"{API}/{copy}/nodes/1")).json()
    assert node["author"] is None and node["imported_author"] == "alice"
    second = (await client.get(f"{API}/{copy}/nodes/2")).json()
    assert second["author"] is None and second["imported_author"] is None
    [note] = (await client.get(f"{API}/{copy}/notes")).json()
    assert note["author"] == me and note["imported_author"] == "alice" and note["mine"]
    assert note["text"] == "mine" and note["codes"] == ["c"]

    # The copy's export says the same, and a copy of the copy keeps the first record.
    again = await _export(client, copy)
    first = again["nodes"][0]
    assert first["author"] is None and first["imported_author"] == "alice"
    assert first["notes"][0]["author"] == me and first["notes"][0]["imported_author"] == "alice"
    third = await _import(client, again)
    node = (await client.get(f"{API}/{third}/nodes/1")).json()
    assert node["author"] is None and node["imported_author"] == "alice"
    [note] = (await client.get(f"{API}/{third}/notes")).json()
    assert note["author"] == me and note["imported_author"] == "alice"

    # The original is untouched.
    original = (await client.get(f"{API}/{tid}/nodes/1")).json()
    assert original["author"] is None and original["imported_author"] is None
