"""A merge reads both live workspaces on a second connection while its own reads the
base (PostgreSQL, when the pool has one idle and the merge has written nothing yet):
the answer is the same either way, and a failure leaves no connection behind."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.db.engine import Database
from haico.db.repositories import live as live_repo
from haico.services.merge import sides as sides_module
from tests.helpers import counted_calls, db_of
from tests.history_helpers import workspace
from tests.merge.test_merge_api import family, merge, merged


async def test_a_merge_plans_the_same_with_or_without_a_spare_connection(
    backend: str, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, side = await family(client)
    calls = counted_calls(monkeypatch, live_repo, "live_rows_of_two_on")
    beside = await merge(client, root, f"{side}:3", preview=True)
    assert beside.status_code == 200, beside.text
    assert len(calls) == (1 if backend == "postgres" else 0)
    monkeypatch.setattr(Database, "has_spare_connection", lambda self: False)
    alone = await merge(client, root, f"{side}:3", preview=True)
    assert alone.status_code == 200, alone.text
    assert len(calls) == (1 if backend == "postgres" else 0)
    assert beside.json() == alone.json() and beside.json()["changes"]
    out = await merged(client, root, f"{side}:3")
    assert out["plan"]["changes"] == alone.json()["changes"]
    todos = [t["text"] for t in (await workspace(client, root))["todos"]]
    assert "interview users" in todos and "survey" in todos


async def test_an_apply_that_fails_beside_leaves_no_connection_out(
    backend: str, app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, side = await family(client)
    calls = counted_calls(monkeypatch, live_repo, "live_rows_of_two_on")

    async def broken(*args: Any, **kwargs: Any) -> Any:
        await asyncio.sleep(0)  # the read beside has started
        raise RuntimeError("injected: the base could not be read")

    monkeypatch.setattr(sides_module, "_base", broken)
    pool = db_of(app).engine.sync_engine.pool
    out_before = pool.checkedout()  # type: ignore[attr-defined]
    failed = await merge(client, root, f"{side}:3")
    assert failed.status_code == 500
    assert len(calls) == (1 if backend == "postgres" else 0)
    assert pool.checkedout() == out_before  # type: ignore[attr-defined]
    monkeypatch.undo()
    assert (await merge(client, root, f"{side}:3")).status_code == 201
