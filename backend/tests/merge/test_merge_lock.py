"""PostgreSQL: a merge locks its thread and family head and walks both threads' lineage
in one statement. The walk is as of that statement's snapshot; when the lock had to
wait for a change of the family (the head row's version moved), the walk may be out
of date, so the merge walks again in its transaction, and brings the same changes."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import text

from haico.db.repositories import lineage as lineage_repo
from tests.helpers import counted_calls, db_of
from tests.history_helpers import workspace
from tests.merge.test_merge_api import family, merge, merged


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> str:
    """The lock with the walks is PostgreSQL's (SQLite takes one lock for the whole
    database and walks in its own query, as every other test there shows)."""
    request.getfixturevalue("pg_url")
    return "postgres"


async def test_the_lock_walks_both_threads(
    client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, side = await family(client)
    walks = counted_calls(monkeypatch, lineage_repo, "load_lineages")
    out = await merged(client, root, f"{side}:3")
    assert walks == [] and out["plan"]["changes"]
    again = await merge(client, root, f"{side}:3")
    assert again.status_code == 422 and again.json()["code"] == "nothing_to_merge"
    assert walks == []


async def test_a_lock_that_waited_for_the_family_walks_again(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, side = await family(client)
    expected = (await merge(client, root, f"{side}:3", preview=True)).json()["changes"]
    walks = counted_calls(monkeypatch, lineage_repo, "load_lineages")
    db = db_of(app)
    async with db.transaction() as s:
        # As a turn's opening does: the family's head row locked and its version moved.
        await s.execute(
            text("UPDATE chat_heads SET version = version + 1 WHERE root_thread_id = :r"),
            {"r": root},
        )
        applying = asyncio.ensure_future(merge(client, root, f"{side}:3"))
        await asyncio.sleep(0.3)
        assert not applying.done()  # waiting for the head row
    out = await applying
    assert out.status_code == 201, out.text
    assert walks == [1] and out.json()["plan"]["changes"] == expected
    todos = [t["text"] for t in (await workspace(client, root))["todos"]]
    assert "interview users" in todos and "survey" in todos
