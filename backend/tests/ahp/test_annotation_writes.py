"""AHP clients write notes on the session's annotations channel the way REST does
(AHP 1.0.0, over a real WebSocket, every message validated against the schemas): a
new annotation creates a note on the node its `origin.turnId` names, the host's
authoritative action carries the note's id and the client's dispatch as its origin,
an entry set edits it, a removal deletes it; and every action on a node or note that
is not in this session, or not the caller's, comes back refused with nothing written.
On SQLite and PostgreSQL."""

from __future__ import annotations

import uuid
from typing import Any

from fastapi import FastAPI
from httpx import AsyncClient

from haico.services.access import users
from haico.services.families import conversations
from tests.ahp.live import connected, session_of
from tests.ahp.wire import AhpClient
from tests.helpers import db_of
from tests.history_helpers import live_server, new_thread, turn_ok

API = "/api/conversations"


def new_annotation(node: str, text: str, codes: list[str], ann_id: str = "mine-1") -> Any:
    session = session_of(node.split(":")[0])
    return {
        "type": "annotations/set",
        "annotation": {
            "id": ann_id,
            "origin": {"session": session, "turnId": node},
            "resource": f"haico-node:/{node}",
            "resolved": False,
            "entries": [{"id": "text", "text": text, "_meta": {"haico/codes": codes}}],
        },
    }


def two_entries(action: Any) -> Any:
    """A valid annotation a note cannot be: a note has one entry."""
    entries = action["annotation"]["entries"]
    action["annotation"]["entries"] = [*entries, {**entries[0], "id": "more"}]
    return action


async def dispatch(c: AhpClient, channel: str, action: Any, seq: int) -> Any:
    """Dispatch `action`; the envelope that answers it (the echo, or the refusal)."""
    await c.notify("dispatchAction", {"channel": channel, "clientSeq": seq, "action": action})
    return await c.wait_for(lambda e: (e.get("origin") or {}).get("clientSeq") == seq)


async def family_notes(client: AsyncClient, tid: str) -> list[tuple[str, str, list[str]]]:
    r = await client.get(f"{API}/{tid}/notes")
    assert r.status_code == 200, r.text
    return [(n["node_id"], n["text"], n["codes"]) for n in r.json()]


async def test_an_ahp_client_creates_edits_and_removes_a_note(
    app: FastAPI, client: AsyncClient
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    channel = session_of(tid) + "/annotations"
    async with live_server(app) as base:
        c = await connected(base, channel)
        watcher = await connected(base, channel)  # another client sees the same actions

        made = await dispatch(c, channel, new_annotation(f"{tid}:1", "too eager", ["eager"]), 1)
        assert "rejectionReason" not in made, made
        ann = made["action"]["annotation"]
        assert made["channel"] == channel and made["origin"]["clientId"]
        assert ann["id"].startswith("note-") and ann["id"] != "mine-1"  # the host's id
        assert ann["origin"]["turnId"] == f"{tid}:1" and ann["entries"][0]["text"] == "too eager"
        assert await family_notes(client, tid) == [(f"{tid}:1", "too eager", ["eager"])]
        seen = await watcher.wait_for(lambda e: e["action"]["type"] == "annotations/set")
        assert seen["action"]["annotation"]["id"] == ann["id"] and "origin" not in seen

        # an entry set edits the text and codes; markdown text counts as text
        entry = {"id": "text", "text": {"markdown": "*eager*"}, "_meta": {"haico/codes": ["x"]}}
        edit = {"type": "annotations/entrySet", "annotationId": ann["id"], "entry": entry}
        edited = await dispatch(c, channel, edit, 2)
        assert edited["action"]["annotation"]["entries"][0]["text"] == "*eager*"
        assert await family_notes(client, tid) == [(f"{tid}:1", "*eager*", ["x"])]
        # a set with the note's own id replaces it too
        again = new_annotation(f"{tid}:1", "calm again", ["calm"], ann_id=ann["id"])
        await dispatch(c, channel, again, 3)
        assert await family_notes(client, tid) == [(f"{tid}:1", "calm again", ["calm"])]
        codes = (await client.get("/api/codes")).json()
        assert {x["code"]: x["count"] for x in codes}.get("calm") == 1

        gone = await dispatch(
            c, channel, {"type": "annotations/removed", "annotationId": ann["id"]}, 4
        )
        assert gone["action"] == {"type": "annotations/removed", "annotationId": ann["id"]}
        assert await family_notes(client, tid) == []
        assert not c.invalid and not watcher.invalid
        await c.close()
        await watcher.close()


async def test_what_is_not_this_sessions_or_the_callers_is_refused(
    app: FastAPI, client: AsyncClient
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    other = await new_thread(client)
    await turn_ok(client, other, "objective: elsewhere")
    note = (await client.post(f"{API}/{other}/nodes/1/notes", json={"text": "theirs"})).json()
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    channel = session_of(tid) + "/annotations"
    foreign_channel = session_of(foreign.thread_id) + "/annotations"
    async with live_server(app) as base:
        c = await connected(base, channel)
        refused = [
            # a node of another family of mine, on this session's channel
            (channel, new_annotation(f"{other}:1", "x", [])),
            # another user's session, and a node of it
            (foreign_channel, new_annotation(f"{foreign.thread_id}:1", "x", [])),
            (channel, new_annotation(f"{tid}:9", "x", [])),  # no such node
            # a note of another family: neither edited nor removed through this channel
            (channel, {"type": "annotations/removed", "annotationId": f"note-{note['id']}"}),
            (channel, new_annotation(f"{tid}:1", "x", [], ann_id=f"note-{note['id']}")),
            # not notes' shape
            (channel, two_entries(new_annotation(f"{tid}:1", "x", []))),
            (channel, new_annotation(f"{tid}:1", "", [])),
            (channel, {"type": "annotations/updated", "annotationId": f"note-{note['id']}"}),
        ]
        for seq, (where, action) in enumerate(refused, start=1):
            answer = await dispatch(c, where, action, seq)
            assert answer.get("rejectionReason"), (seq, answer)
            assert answer["action"] == action
        assert await family_notes(client, tid) == []
        assert await family_notes(client, other) == [(f"{other}:1", "theirs", [])]
        await c.close()

        # 0.9.0 has no annotations channel to write to either
        old = await connected(base, version="0.9.0")
        answer = await dispatch(old, channel, new_annotation(f"{tid}:1", "x", []), 1)
        assert "1.0.0" in answer["rejectionReason"]
        await old.close()
    assert await family_notes(client, tid) == []
