"""A merge on a linear host (`HAICO_HISTORY_RETAINS_BRANCHES=false`): like a send, it
keeps only the selected path, even when what it brings comes from a node it prunes."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.history_helpers import checkout, graph, new_thread, turn_ok, workspace


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"history_retains_branches": False}


async def test_a_merge_into_a_restored_step_prunes_the_old_future(
    client: httpx.AsyncClient,
) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: one")
    await turn_ok(client, root, "todo: two")
    await turn_ok(client, root, "todo: three")
    draft = (await checkout(client, root, f"{root}:1")).json()["working_thread_id"]
    r = await client.post(
        f"/api/conversations/{draft}/merge",
        json={"source": f"{root}:3", "mode": "pick"},
    )
    assert r.status_code == 201, r.text
    assert r.json()["node_id"] == f"{draft}:2"
    assert [t["text"] for t in (await workspace(client, draft))["todos"]] == ["three"]
    g = await graph(client, draft)
    assert sorted(n["id"] for n in g["nodes"]) == sorted([f"{root}:1", f"{draft}:2"])
    assert [n["kind"] for n in g["nodes"] if n["id"] == f"{draft}:2"] == ["merge"]
    assert not any(e["kind"] == "merge" for e in g["edges"])  # its source was pruned
