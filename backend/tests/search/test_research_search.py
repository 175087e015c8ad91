"""Search across branches, through the REST API on both databases."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from alembic import command
from haico.cli.schema import alembic_config
from haico.config import Settings
from haico.db.engine import Database
from haico.services.access import users
from haico.services.families import conversations
from haico.services.search import service as search
from tests.conftest import PG_ADMIN_URL, _admin
from tests.helpers import as_user, db_of
from tests.history_helpers import checkout, new_thread, turn_ok, wait_for_active_turn
from tests.sse_client import send_turn

API = "/api/conversations"


async def _search(client: httpx.AsyncClient, q: str, **params: Any) -> list[dict[str, Any]]:
    r = await client.get("/api/search", params={"q": q, **params})
    assert r.status_code == 200, r.text
    results: list[dict[str, Any]] = r.json()["results"]
    return results


async def test_search_finds_text_on_a_branch_off_the_displayed_path(
    client: httpx.AsyncClient,
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: start")
    await turn_ok(client, tid, "objective: second")
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": 1})
    bid = r.json()["thread_id"]
    await turn_ok(client, bid, "prefer: the marmalade pelican idea")
    # back on the root: the branch is off the displayed path
    r = await client.post(f"{API}/{tid}/checkout", json={"turn_id": f"{tid}:2"})
    assert r.status_code == 200 and r.json()["head_turn_id"] == f"{tid}:2"

    hits = await _search(client, "pelican")
    user_hits = [h for h in hits if h["kind"] == "user"]
    assert user_hits == [
        {
            "node_id": f"{bid}:2",
            "thread_id": bid,
            "root_thread_id": tid,
            "kind": "user",
            "snippet": "prefer: the marmalade pelican idea",
        }
    ]
    # the reply describes the new preference: found as the assistant's text
    assert {h["kind"] for h in hits} <= {"user", "assistant"}
    # every word must match
    assert await _search(client, "pelican zebra") == []
    best = await _search(client, "marmalade pelican")
    assert best[0]["node_id"] == f"{bid}:2"


async def test_search_documents_and_snippets(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    long = "Opening words. " * 20 + "The quokka census ended early." + " Closing words." * 20
    await turn_ok(client, tid, f"replace document: {long}")
    await turn_ok(client, tid, "objective: unrelated")  # document unchanged: not indexed again
    hits = [h for h in await _search(client, "quokka") if h["kind"] == "document"]
    assert [h["node_id"] for h in hits] == [f"{tid}:1"]
    snip = hits[0]["snippet"]
    assert "quokka census" in snip and snip.startswith("…") and snip.endswith("…")
    assert len(snip) <= 202


async def test_the_document_is_indexed_where_it_changed(client: httpx.AsyncClient) -> None:
    """A turn indexes the live document when it differs from the last one indexed for
    its thread: not when it stayed the same, again when it changed back, never when it
    is blank. A turn continuing from a restored turn (whose document is a stored body,
    not a copy) indexes that body's text on the new branch."""
    tid = await new_thread(client)
    await turn_ok(client, tid, "replace document: the wombat draft")
    await turn_ok(client, tid, "objective: unrelated")
    await turn_ok(client, tid, "replace document: a rewrite without it")
    await turn_ok(client, tid, "replace document: the wombat draft")
    await turn_ok(client, tid, "replace document:    ")
    await turn_ok(client, tid, "objective: still blank")

    async def documents(word: str) -> list[str]:
        return sorted(h["node_id"] for h in await _search(client, word) if h["kind"] == "document")

    assert await documents("wombat") == [f"{tid}:1", f"{tid}:4"]
    assert await documents("rewrite") == [f"{tid}:3"]

    r = await checkout(client, tid, f"{tid}:1")
    assert r.status_code == 200, r.text
    draft = r.json()["working_thread_id"]
    await turn_ok(client, draft, "objective: from the restored draft")
    branch_hits = [h for h in await _search(client, "wombat") if h["kind"] == "document"]
    assert len(branch_hits) == 3
    (new,) = [h for h in branch_hits if h["thread_id"] != tid]
    assert new["node_id"].endswith(":2") and "wombat draft" in new["snippet"]


async def _put_document(client: httpx.AsyncClient, thread_id: str, content: str) -> None:
    r = await client.put(f"{API}/{thread_id}/document", json={"content": content})
    assert r.status_code == 200, r.text


async def _documents(client: httpx.AsyncClient, word: str) -> list[str]:
    return sorted(h["node_id"] for h in await _search(client, word) if h["kind"] == "document")


async def test_a_live_document_edit_is_found_at_the_head_node(client: httpx.AsyncClient) -> None:
    """The workspace after the latest turn is that turn's node (the snapshot rule), so
    a document edited since is found there at once, not after the next turn, and the
    text it replaced no longer matches that node."""
    tid = await new_thread(client)
    await turn_ok(client, tid, "replace document: the okapi outline")
    await _put_document(client, tid, "the narwhal essay")
    assert await _documents(client, "narwhal") == [f"{tid}:1"]
    assert await _documents(client, "okapi") == []
    await _put_document(client, tid, "the narwhal essay, longer")
    assert await _documents(client, "narwhal") == [f"{tid}:1"]
    assert await _documents(client, "longer") == [f"{tid}:1"]

    # A document unchanged since an earlier node: that node keeps its text.
    await turn_ok(client, tid, "objective: unrelated")
    await _put_document(client, tid, "the tapir memo")
    assert await _documents(client, "tapir") == [f"{tid}:2"]
    assert await _documents(client, "longer") == [f"{tid}:1"]
    # The next turn leaves it alone: it is indexed once, where it changed.
    await turn_ok(client, tid, "objective: still the memo")
    assert await _documents(client, "tapir") == [f"{tid}:2"]
    # Edited back to the text indexed before the head node: no entry of its own there.
    await _put_document(client, tid, "the tapir memo")
    await _put_document(client, tid, "   ")
    assert await _documents(client, "tapir") == [f"{tid}:2"]


async def test_a_live_edit_indexes_only_a_node_its_thread_owns(client: httpx.AsyncClient) -> None:
    """A draft's live rows are no node yet (they become its first turn's), and an edit
    made while a turn runs belongs to that turn, found once it ends."""
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    r = await checkout(client, tid, f"{tid}:1")
    assert r.status_code == 200, r.text
    draft = r.json()["working_thread_id"]
    await _put_document(client, draft, "the gerenuk sketch")
    assert await _documents(client, "gerenuk") == []
    await turn_ok(client, draft, "objective: on the draft")
    assert await _documents(client, "gerenuk") == [f"{draft}:2"]

    running = asyncio.create_task(send_turn(client, draft, "wait: 30"))
    await wait_for_active_turn(client, draft)
    await _put_document(client, draft, "the saola notes")
    assert await _documents(client, "saola") == []
    r = await client.post(f"{API}/{draft}/turns/cancel")
    assert r.status_code == 200, r.text
    await running
    assert await _documents(client, "saola") == [f"{draft}:3"]
    assert await _documents(client, "gerenuk") == [f"{draft}:2"]


async def test_search_never_shows_other_users_or_deleted_threads(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    db = db_of(app)
    stranger, _ = await users.create(db, name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db, principal=stranger)
    async with db.transaction() as s:
        await search.index_node_in(
            s,
            thread_id=foreign.thread_id,
            turn_index=1,
            user_message="the secret wombat plan",
            reply="",
            document=None,
        )
    assert await _search(client, "wombat") == []

    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: wombat one")
    gone = await new_thread(client)
    await turn_ok(client, gone, "objective: wombat two")
    assert {h["thread_id"] for h in await _search(client, "wombat")} == {tid, gone}
    assert (await client.delete(f"{API}/{gone}")).status_code == 204
    assert {h["thread_id"] for h in await _search(client, "wombat")} == {tid}


async def test_search_input_and_limit(client: httpx.AsyncClient) -> None:
    assert (await client.get("/api/search", params={"q": ""})).status_code == 422
    assert (await client.get("/api/search")).status_code == 422
    r = await client.get("/api/search", params={"q": "   "})
    assert r.status_code == 422 and r.json()["code"] == "invalid_input"
    assert (await client.get("/api/search", params={"q": "x", "limit": 0})).status_code == 422
    tid = await new_thread(client)
    for k in range(4):
        await turn_ok(client, tid, f"objective: capybara {k}")
    assert len(await _search(client, "capybara", limit=3)) == 3
    # search syntax is not an error: quotes, a dangling minus, SQL characters
    for q in ('"capybara', "capybara -", "capybara' OR 1=1 --", "%_\\"):
        r = await client.get("/api/search", params={"q": q})
        assert r.status_code == 200, (q, r.text)


@pytest.fixture
async def empty_db_url(backend: str) -> Any:
    if backend == "sqlite":
        yield None
        return
    name = f"test_mig_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}"')
    yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_migration_backfills_the_index(empty_db_url: str | None, tmp_path: Path) -> None:
    """Rows written before the index existed are searchable after `haico migrate`."""
    settings = Settings(database_url=empty_db_url, data_dir=tmp_path / "d")
    settings.data_dir.mkdir(parents=True)
    cfg = alembic_config(settings)
    await asyncio.to_thread(command.upgrade, cfg, "0008")  # type: ignore[arg-type]
    engine = create_async_engine(settings.sql_url)
    rows = [
        "INSERT INTO users (id, name) VALUES (7, 'old')",
        "INSERT INTO conversations (thread_id, user_id, root_thread_id, title, turn_index, "
        "message_count, building) VALUES ('th_old', 7, 'th_old', 't', 1, 2, false)",
        "INSERT INTO workspace_snapshots (thread_id, turn_index, format, preferences, todos, "
        "user_message, state, reply) VALUES ('th_old', 1, 3, '[]', '[]', 'ancient armadillo', "
        "'complete', 'a reply about an okapi')",
        "INSERT INTO documents (thread_id, title, content) VALUES ('th_old', 'd', 'gazelle text')",
    ]
    async with engine.begin() as conn:
        for sql in rows:
            await conn.execute(text(sql))
    await asyncio.to_thread(command.upgrade, cfg, "head")  # type: ignore[arg-type]
    async with engine.connect() as conn:
        found = (
            await conn.execute(
                text("SELECT kind, turn_index, content FROM search_entries ORDER BY kind")
            )
        ).all()
    await engine.dispose()
    assert [tuple(r) for r in found] == [
        ("assistant", 1, "a reply about an okapi"),
        ("document", 1, "gazelle text"),
        ("user", 1, "ancient armadillo"),
    ]
    db = Database(settings.sql_url)
    try:
        for word, kind in (("armadillo", "user"), ("okapi", "assistant"), ("gazelle", "document")):
            hits = (await search.search(db, principal=as_user(7), query=word, limit=5)).results
            assert [(h.node_id, h.kind) for h in hits] == [("th_old:1", kind)]
    finally:
        await db.dispose()
