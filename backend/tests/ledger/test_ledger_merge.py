"""The research ledger on merge nodes, through the public API on SQLite and PostgreSQL:
a merge or a pick is a node of kind `merge` in the node's details and the CSV, and
the workspace changes it made are recorded at it with origin `merge`."""

from __future__ import annotations

from typing import Any

import httpx

from tests.ledger.test_ledger_export import csv_of
from tests.merge.test_merge_api import family, merged

API = "/api/conversations"


async def node(client: httpx.AsyncClient, tid: str, k: int) -> dict[str, Any]:
    r = await client.get(f"{API}/{tid}/nodes/{k}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_a_merge_nodes_changes_have_origin_merge(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    out = await merged(client, root, f"{side}:3")
    assert out["node_id"] == f"{root}:3"

    got = await node(client, root, 3)
    assert got["kind"] == "merge"
    # the branch's two todos and its preference came in, each recorded once
    assert sorted((e["surface"], e["kind"], e["origin"]) for e in got["edits"]) == [
        ("preference", "add", "merge"),
        ("todo", "add", "merge"),
        ("todo", "add", "merge"),
    ]
    assert all(e["uid"] for e in got["edits"])
    # a turn before it stays a turn, with no merge edit
    before = await node(client, root, 2)
    assert before["kind"] == "turn"
    assert all(e["origin"] != "merge" for e in before["edits"])

    r = await client.get(f"{API}/{root}/edits", params={"origin": "merge"})
    assert r.status_code == 200, r.text
    assert {e["node_id"] for e in r.json()} == {f"{root}:3"}
    assert len(r.json()) == 3

    _, rows = await csv_of(client, f"{API}/{root}/export.csv")
    kinds = {row["node_id"]: row["kind"] for row in rows}
    assert kinds[f"{root}:3"] == "merge"
    assert kinds[f"{root}:2"] == "turn"


async def test_a_pick_is_a_merge_node_whose_change_has_origin_merge(
    client: httpx.AsyncClient,
) -> None:
    root, side = await family(client)
    await merged(client, root, f"{side}:3", mode="pick")
    got = await node(client, root, 3)
    assert got["kind"] == "merge"
    # a pick brings only that node's own change: the last todo
    assert [(e["surface"], e["kind"], e["origin"]) for e in got["edits"]] == [
        ("todo", "add", "merge")
    ]
