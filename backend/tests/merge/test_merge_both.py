"""A document conflict kept on both sides (`resolutions: {id: "both"}`), through the
API on SQLite and PostgreSQL: two new paragraphs written at the same place on two
paths both survive the bring-in, the target's first; `both` for anything but a
document change is refused and writes nothing."""

from __future__ import annotations

import httpx

from tests.history_helpers import checkout, graph, new_thread, turn_ok, workspace
from tests.merge.test_merge_api import branch, merge, merged


async def two_paragraphs(client: httpx.AsyncClient) -> tuple[str, str]:
    """A root whose document is one paragraph; a branch at 1 and the root each append
    a paragraph of their own at the end (one overlapping hunk)."""
    root = await new_thread(client)
    await turn_ok(client, root, "objective: essay; write: Cycling is healthy.")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "write: Bikes are cheap.")
    await checkout(client, root, f"{root}:1")
    await turn_ok(client, root, "write: Lanes make cycling safe.")
    return root, side


async def test_a_document_conflict_keeps_both_paragraphs(client: httpx.AsyncClient) -> None:
    root, side = await two_paragraphs(client)
    plan = (await merge(client, root, f"{side}:2", preview=True)).json()
    docs = [c for c in plan["changes"] if c["surface"] == "document"]
    assert [c["conflict"] for c in docs] == [True]
    result = await merged(client, root, f"{side}:2", resolutions={docs[0]["id"]: "both"})
    content = (await workspace(client, root))["document"]["content"]
    assert content.index("Cycling is healthy.") < content.index("Lanes make cycling safe.")
    assert content.index("Lanes make cycling safe.") < content.index("Bikes are cheap.")
    assert result["node_id"] == f"{root}:3"
    kinds = {n["id"]: n["kind"] for n in (await graph(client, root))["nodes"]}
    assert kinds[f"{root}:3"] == "merge"


async def test_both_is_for_a_document_change_only(client: httpx.AsyncClient) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: one")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "objective: two")
    await checkout(client, root, f"{root}:1")
    await turn_ok(client, root, "objective: three")
    plan = (await merge(client, root, f"{side}:2", preview=True)).json()
    objective = next(c for c in plan["changes"] if c["surface"] == "objective")
    r = await merge(client, root, f"{side}:2", resolutions={objective["id"]: "both"})
    assert r.status_code == 422, r.text
    assert "document" in r.json()["message"]
    assert (await workspace(client, root))["objective"] == "three"
    assert len((await graph(client, root))["nodes"]) == 3
