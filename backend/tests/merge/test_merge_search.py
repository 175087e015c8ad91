"""A merged document is found by search at the merge node, on both databases.

On PostgreSQL the merge writes the entry without its text-search vector, which is
computed after the commit (`services.search.vectors`): by the server in the
background, by a caller without a filler (the CLI) before it returns, and, when the
process died in between, by the next process at its start.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.config import Settings
from haico.db.repositories.search import MAX_INDEXED
from haico.domain import NodeId
from haico.main import create_app
from haico.schemas.merge import MergeIn
from haico.services.access import users
from haico.services.merge import service as merge_service
from tests.history_helpers import new_thread, turn_ok
from tests.merge.test_merge_api import branch, merged

API = "/api/conversations"


async def _documents(client: httpx.AsyncClient, word: str) -> list[tuple[str, str]]:
    r = await client.get("/api/search", params={"q": word})
    assert r.status_code == 200, r.text
    return sorted(
        (h["node_id"], h["snippet"]) for h in r.json()["results"] if h["kind"] == "document"
    )


async def _family(client: httpx.AsyncClient) -> tuple[str, str]:
    """A root whose document a branch rewrites with a word found nowhere else."""
    root = await new_thread(client)
    put = await client.put(f"{API}/{root}/document", json={"content": "a plain draft\n"})
    assert put.status_code == 200, put.text
    await turn_ok(client, root, "objective: write")
    side = await branch(client, root, 1)
    put = await client.put(f"{API}/{side}/document", json={"content": "the quokka section\n"})
    assert put.status_code == 200, put.text
    await turn_ok(client, side, "todo: cite it")
    return root, side


async def test_the_merged_document_is_found_at_the_merge_node(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    root, side = await _family(client)
    out = await merged(client, root, f"{side}:2")
    await app.state.turns.vectors.idle()
    node = out["node_id"]
    hits = await _documents(client, "quokka")
    assert node in [n for n, _ in hits] and f"{side}:2" in [n for n, _ in hits]
    # A turn after the merge leaves the document as merged: indexed once, at the node
    # that made it so, not again at the turn.
    await turn_ok(client, root, "objective: go on")
    assert [n for n, _ in await _documents(client, "quokka") if n.startswith(root)] == [node]


async def test_a_long_merged_document_is_indexed_up_to_the_limit(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The entry holds the document's first `MAX_INDEXED` characters, as a turn's does:
    a word within them is found at the merge node, a word past them is not."""
    root = await new_thread(client)
    put = await client.put(f"{API}/{root}/document", json={"content": "a plain draft\n"})
    assert put.status_code == 200, put.text
    await turn_ok(client, root, "objective: write")
    side = await branch(client, root, 1)
    filler = "padding words here\n" * (MAX_INDEXED // 19 + 10)
    content = "the wombat opening\n" + filler + "the numbat ending\n"
    assert len(content) > MAX_INDEXED + 50
    put = await client.put(f"{API}/{side}/document", json={"content": content})
    assert put.status_code == 200, put.text
    await turn_ok(client, side, "todo: cite it")
    out = await merged(client, root, f"{side}:2")
    await app.state.turns.vectors.idle()
    assert out["node_id"] in [n for n, _ in await _documents(client, "wombat")]
    assert out["node_id"] not in [n for n, _ in await _documents(client, "numbat")]
    workspace = (await client.get(f"{API}/{root}/workspace")).json()
    assert workspace["document"]["content"] == content


async def test_vectors_a_dead_process_left_are_computed_at_the_next_start(
    app: FastAPI,
    client: httpx.AsyncClient,
    settings: Settings,
    backend: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The merge commits, and the process dies before its background fill (here: the
    fill never starts). PostgreSQL search misses the merged document until a process
    starts on the same database; SQLite, which keeps no vectors, finds it at once."""
    root, side = await _family(client)
    kicked: list[NodeId] = []
    monkeypatch.setattr(app.state.turns.vectors, "kick", kicked.append)
    out = await merged(client, root, f"{side}:2")
    assert [str(n) for n in kicked] == ([out["node_id"]] if backend == "postgres" else [])
    found = [n for n, _ in await _documents(client, "quokka")]
    assert (out["node_id"] in found) is (backend == "sqlite")

    restarted = create_app(settings)
    async with restarted.router.lifespan_context(restarted):
        transport = httpx.ASGITransport(app=restarted)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c2:
            found = [n for n, _ in await _documents(c2, "quokka")]
    assert out["node_id"] in found


async def test_a_merge_without_a_filler_computes_the_vector_before_it_returns(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """The service called as the CLI calls it (no background filler): the merged
    document is searchable as soon as the call returns."""
    root, side = await _family(client)
    handles: Any = app.state.handles
    user = await users.ensure_local(handles.db, name=handles.settings.local_user_name)
    out = await merge_service.merge(
        handles.db,
        handles.runtime,
        principal=user,
        thread_id=root,
        body=MergeIn(source=f"{side}:2", mode="merge"),
    )
    assert out.node_id in [n for n, _ in await _documents(client, "quokka")]
