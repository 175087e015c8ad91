"""One family, one answer on SQLite and PostgreSQL: every step's time is written by the
application with microseconds, so steps made within one second keep their order, the
capped graph keeps the same nodes, and the analysis CSV carries the same times (the
test runs on each database and expects the answer worked out from the order the steps
were made in, so both give the same)."""

from __future__ import annotations

import csv
import io
import re
from datetime import datetime
from typing import Any

import httpx
import pytest

from tests.big_trees.test_big_trees import branch, graph, root_with

MICROS = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00")
CAP = 10


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"graph_node_cap": CAP}


async def csv_rows(client: httpx.AsyncClient, thread_id: str) -> dict[str, dict[str, str]]:
    r = await client.get(f"/api/conversations/{thread_id}/export.csv")
    assert r.status_code == 200, r.text
    return {row["node_id"]: row for row in csv.DictReader(io.StringIO(r.text))}


async def test_one_family_one_answer_on_both_databases(client: httpx.AsyncClient) -> None:
    # 14 steps within a few seconds: r:1-8, then c:3-4 off r:2, then d:2-5 off r:1.
    r = await root_with(client, *(f"objective: r{k}" for k in range(1, 9)))
    c = await branch(client, r, 2, "todo: c3", "todo: c4")
    d = await branch(client, r, 1, "todo: d2", "todo: d3", "todo: d4", "todo: d5")
    made = [
        *(f"{r}:{k}" for k in range(1, 9)),
        *(f"{c}:{k}" for k in (3, 4)),
        *(f"{d}:{k}" for k in range(2, 6)),
    ]

    # d's graph: the 10 newest steps (d's four, c's two, r:5-8), and d's path on top
    # (r:1); r:2-4 are the oldest off the path. With whole seconds the steps tied and the
    # order fell back to depth, which kept r:2-4 instead of some newer steps.
    body = await graph(client, d)
    got = {n["id"] for n in body["nodes"]}
    assert got == {*made[-CAP:], f"{r}:1"}
    assert body["truncated"] is True
    times = {n["id"]: datetime.fromisoformat(n["captured_at"]) for n in body["nodes"]}
    assert sorted(times, key=times.__getitem__) == [m for m in made if m in times]

    # The root's graph: the newest 10 and the root's path r:1-8 on top leave nothing out,
    # so it is whole (the cap counts the newest; the path is never dropped).
    whole = await graph(client, r)
    assert {n["id"] for n in whole["nodes"]} == set(made)
    assert whole["truncated"] is False

    # The CSV: every time with its microseconds, the graph's own, in the order made.
    rows = await csv_rows(client, r)
    assert set(rows) == set(made)
    for row in rows.values():
        assert MICROS.fullmatch(row["started_at"]), row["started_at"]
        assert MICROS.fullmatch(row["completed_at"]), row["completed_at"]
    started = {n: datetime.fromisoformat(rows[n]["started_at"]) for n in made}
    assert sorted(made, key=started.__getitem__) == made
    assert all(started[n] == at for n, at in times.items())
    assert len(set(started.values())) == len(made)
