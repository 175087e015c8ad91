"""A conversation created by its first edit (`?create=true` on `PUT …/objective`,
`PUT …/document`, `POST …/preferences` and `POST …/todos`), on both databases: the
thread and the edit are committed together, so an edit refused or failed leaves no
empty conversation in the list (the studio's first edit of a conversation it named)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.domain import new_thread_id
from tests.helpers import (
    db_of,
    listed_conversations,
    local_and_strangers_thread,
    seed_conversation,
)

API = "/api/conversations"

# Each first edit: method, path under the thread, body.
EDITS: dict[str, tuple[str, str, dict[str, Any]]] = {
    "objective": ("PUT", "objective", {"text": "Bridges that do not sway"}),
    "document": ("PUT", "document", {"title": "Notes", "content": "Decks and damping."}),
    "preference": ("POST", "preferences", {"text": "short sentences", "locked": False}),
    "todo": ("POST", "todos", {"text": "read about Tacoma", "done": False, "depth": 0}),
}


async def _edit(
    client: httpx.AsyncClient, tid: str, edit: str, *, create: bool, **body: Any
) -> httpx.Response:
    method, path, base = EDITS[edit]
    params = {"create": "true"} if create else None
    return await client.request(method, f"{API}/{tid}/{path}", params=params, json={**base, **body})


@pytest.mark.parametrize("edit", list(EDITS))
async def test_the_first_edit_creates_the_conversation(
    client: httpx.AsyncClient, edit: str
) -> None:
    tid = new_thread_id()
    assert (await _edit(client, tid, edit, create=False)).status_code == 404
    assert (await _edit(client, tid, edit, create=True)).status_code in (200, 201)
    listed = (await listed_conversations(client))[tid]
    assert listed["root_thread_id"] == tid and listed["turn_index"] == 0
    workspace = (await client.get(f"{API}/{tid}/workspace")).json()
    if edit == "objective":
        assert workspace["objective"] == "Bridges that do not sway"
        assert listed["title"] == "Bridges that do not sway"
    elif edit == "document":
        assert workspace["document"]["content"] == "Decks and damping."
    else:
        assert len(workspace[f"{edit}s"]) == 1
    # the conversation exists now: the flag changes nothing on the next edit
    assert (await _edit(client, tid, "todo", create=True, text="again")).status_code == 201
    assert len((await client.get(f"{API}/{tid}/workspace")).json()["todos"]) == (
        2 if edit == "todo" else 1
    )


@pytest.mark.parametrize("edit", list(EDITS))
async def test_a_refused_first_edit_creates_nothing(
    app: FastAPI, client: httpx.AsyncClient, edit: str
) -> None:
    tid = new_thread_id()
    limits = db_of(app).limits
    too_long = {
        "objective": {"text": "x" * (limits.message_chars + 1)},
        "document": {"content": "x" * (limits.document_chars + 1)},
        "preference": {"text": "x" * (limits.message_chars + 1)},
        "todo": {"text": "x" * (limits.message_chars + 1)},
    }[edit]
    refused = await _edit(client, tid, edit, create=True, **too_long)
    assert refused.status_code in (413, 422), refused.text
    # Nothing was created: not listed, not readable, and the id is still free.
    assert tid not in await listed_conversations(client)
    assert (await client.get(f"{API}/{tid}")).status_code == 404
    assert (await _edit(client, tid, edit, create=True)).status_code in (200, 201)
    assert tid in await listed_conversations(client)


async def test_create_never_takes_another_users_or_a_deleted_thread(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    foreign = await local_and_strangers_thread(app)
    assert (await _edit(client, foreign.thread_id, "objective", create=True)).status_code == 403
    mine = await seed_conversation(app, app.state.local_user)
    assert (await client.delete(f"{API}/{mine.thread_id}")).status_code == 204
    assert (await _edit(client, mine.thread_id, "document", create=True)).status_code == 404


@pytest.mark.parametrize("edit", list(EDITS))
async def test_create_takes_only_an_id_the_studio_makes(
    client: httpx.AsyncClient, edit: str
) -> None:
    """A new conversation's id is th_ and 32 hexadecimal digits, as a create's `new_id`:
    anything else is refused (422) and nothing is created; a first send says the same."""
    for bad in ("th_short", "notes", "TH_" + "a" * 32, "th_" + "G" * 32):
        refused = await _edit(client, bad, edit, create=True)
        assert refused.status_code == 422, refused.text
        assert "32 hexadecimal digits" in refused.json()["message"]
        assert (await client.get(f"{API}/{bad}")).status_code == 404
    sent = await client.post(
        f"{API}/th_short/turns", params={"create": "true"}, json={"content": "hello"}
    )
    assert sent.status_code == 422 and "32 hexadecimal digits" in sent.json()["message"]
    assert "th_short" not in await listed_conversations(client)
