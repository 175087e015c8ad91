"""Notes and codes through the REST API on both databases: CRUD, ownership, the
codebook, actions on the event stream (AHP annotations), search, export/import."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.models import ActionLogEntry
from haico.services.access import users
from haico.services.families import conversations
from tests.ahp.live import session_of
from tests.helpers import db_of
from tests.history_helpers import new_thread, turn_ok

API = "/api/conversations"


async def add_note(
    client: httpx.AsyncClient, tid: str, k: int, text: str, codes: list[str] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {"text": text}
    if codes is not None:
        body["codes"] = codes
    r = await client.post(f"{API}/{tid}/nodes/{k}/notes", json=body)
    assert r.status_code == 201, r.text
    note: dict[str, Any] = r.json()
    return note


async def logged(app: FastAPI) -> list[tuple[str, dict[str, Any]]]:
    async with db_of(app).read() as s:
        rows = (
            await s.execute(
                select(ActionLogEntry.channel, ActionLogEntry.action).order_by(ActionLogEntry.seq)
            )
        ).all()
    return [(r.channel, r.action) for r in rows]


async def test_note_crud_codes_events_and_search(
    app: FastAPI, client: httpx.AsyncClient, settings: Any
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    a = await add_note(
        client, tid, 1, "Premature closure here", [" closure ", "agent-led", "closure"]
    )
    assert a["node_id"] == f"{tid}:1" and a["codes"] == ["closure", "agent-led"]
    assert a["author"] == settings.local_user_name and a["created_at"] == a["updated_at"]
    b = await add_note(client, tid, 2, "User pushed back", ["pushback", "closure"])

    # the node shows its notes; the family lists all of them
    node = (await client.get(f"{API}/{tid}/nodes/1")).json()
    assert [n["id"] for n in node["notes"]] == [a["id"]]
    listed = (await client.get(f"{API}/{tid}/notes")).json()
    assert [n["id"] for n in listed] == [a["id"], b["id"]]
    graph = (await client.get(f"{API}/{tid}/graph")).json()
    assert {n["id"]: n["codes"] for n in graph["nodes"]} == {
        f"{tid}:1": ["closure", "agent-led"],
        f"{tid}:2": ["pushback", "closure"],
    }

    codes = (await client.get("/api/codes")).json()
    assert codes == [
        {"code": "closure", "count": 2},
        {"code": "agent-led", "count": 1},
        {"code": "pushback", "count": 1},
    ]

    # search finds a note as its node's
    hits = (await client.get("/api/search", params={"q": "premature"})).json()["results"]
    assert [(h["kind"], h["node_id"]) for h in hits] == [("note", f"{tid}:1")]

    # edit, then delete
    r = await client.patch(f"/api/notes/{a['id']}", json={"text": "Early closure", "codes": []})
    assert r.status_code == 200 and r.json()["codes"] == [] and r.json()["text"] == "Early closure"
    assert (await client.get("/api/search", params={"q": "premature"})).json()["results"] == []
    assert (await client.get("/api/search", params={"q": "early closure"})).json()["results"]
    r = await client.delete(f"/api/notes/{b['id']}")
    assert r.status_code == 204
    assert (await client.patch(f"/api/notes/{b['id']}", json={"text": "x"})).status_code == 404
    assert (await client.delete(f"/api/notes/{b['id']}")).status_code == 404
    assert (await client.get("/api/codes")).json() == []
    assert [n["id"] for n in (await client.get(f"{API}/{tid}/notes")).json()] == [a["id"]]

    # every change was an action on the family's annotations channel
    # (logged with the family as their root, so its event stream carries them)
    channel = session_of(tid) + "/annotations"
    notes_log = [(c, x) for c, x in await logged(app) if c == channel]
    kinds = [x["type"] for _, x in notes_log]
    assert kinds == ["annotations/set", "annotations/set", "annotations/set", "annotations/removed"]
    first = notes_log[0][1]["annotation"]
    assert first["origin"]["turnId"] == f"{tid}:1" and first["id"] == f"note-{a['id']}"
    assert first["entries"][0]["text"] == "Premature closure here"


async def test_note_validation_and_ownership(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "hello")
    assert (await client.post(f"{API}/{tid}/nodes/1/notes", json={"text": ""})).status_code == 422
    r = await client.post(f"{API}/{tid}/nodes/1/notes", json={"text": "x", "codes": ["a\nb"]})
    assert r.status_code == 422
    r = await client.post(f"{API}/{tid}/nodes/1/notes", json={"text": "x", "extra": 1})
    assert r.status_code == 422
    assert (await client.post(f"{API}/{tid}/nodes/2/notes", json={"text": "x"})).status_code == 404

    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    r = await client.post(f"{API}/{foreign.thread_id}/nodes/1/notes", json={"text": "x"})
    assert r.status_code == 403
    assert (await client.get(f"{API}/{foreign.thread_id}/notes")).status_code == 403

    # a note of a family the caller cannot read: 404, as no note
    from haico.db.models import Note

    async with db_of(app).transaction() as s:
        theirs = Note(
            user_id=stranger.id,
            root_thread_id=foreign.thread_id,
            thread_id=foreign.thread_id,
            turn_index=1,
            text="not yours",
            codes=["secret-code"],
            author="s",
        )
        s.add(theirs)
        await s.flush()
        their_id = theirs.id
    assert (await client.patch(f"/api/notes/{their_id}", json={"text": "x"})).status_code == 404
    assert (await client.delete(f"/api/notes/{their_id}")).status_code == 404
    assert (await client.get("/api/codes")).json() == []  # only the caller's codebook
    # a deleted thread's notes are gone from view
    mine = await add_note(client, tid, 1, "mine")
    assert (await client.delete(f"{API}/{tid}")).status_code == 204
    assert (await client.patch(f"/api/notes/{mine['id']}", json={"text": "y"})).status_code == 404


async def test_export_import_keeps_notes_and_provenance(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one; todo: a")
    await turn_ok(client, tid, "objective: two")
    await add_note(client, tid, 2, "keep me", ["kept"])
    original = [(await client.get(f"{API}/{tid}/nodes/{k}")).json() for k in (1, 2)]

    doc = (await client.get(f"{API}/{tid}/export")).json()
    r = await client.post(f"{API}/import", json=doc)
    assert r.status_code == 201, r.text
    new = r.json()["thread_id"]
    copied = [(await client.get(f"{API}/{new}/nodes/{k}")).json() for k in (1, 2)]
    for before, after in zip(original, copied, strict=True):
        assert after["provenance"] == before["provenance"]
        assert after["edits"] == before["edits"]
        assert [(n["text"], n["codes"]) for n in after["notes"]] == [
            (n["text"], n["codes"]) for n in before["notes"]
        ]
    # imported notes are searchable, as the new family's
    hits = (await client.get("/api/search", params={"q": "keep me"})).json()["results"]
    assert {h["root_thread_id"] for h in hits} == {tid, new}
    assert {c["code"]: c["count"] for c in (await client.get("/api/codes")).json()} == {"kept": 2}


async def test_a_document_without_a_ledger_imports_its_changes_as_the_imports(
    client: httpx.AsyncClient,
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one; todo: a")
    doc = (await client.get(f"{API}/{tid}/export")).json()
    for n in doc["nodes"]:  # as a document written before the ledger existed
        for key in ("provenance", "edits", "notes"):
            n.pop(key, None)
    r = await client.post(f"{API}/import", json=doc)
    assert r.status_code == 201, r.text
    node = (await client.get(f"{API}/{r.json()['thread_id']}/nodes/1")).json()
    assert [(e["surface"], e["kind"], e["origin"]) for e in node["edits"]] == [
        ("objective", "change", "import"),
        ("todo", "add", "import"),
    ]
    assert node["provenance"]["provider"] is None  # unknown, not invented
