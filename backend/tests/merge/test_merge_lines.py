"""A document conflict settled line by line (`resolutions: {id: {"lines": [...]}}`),
through the API on SQLite and PostgreSQL: the hunk becomes exactly the lines picked
from either side, in the order given; a pick naming a line the hunk lacks, a line
twice, or anything but a document change is refused (422) and writes nothing."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.history_helpers import checkout, graph, new_thread, turn_ok, workspace
from tests.merge.test_merge_api import branch, merge, merged


async def two_by_two(client: httpx.AsyncClient) -> tuple[str, str, str]:
    """A root whose document is one paragraph; a branch at 1 and the root each append
    two paragraphs of their own at the end (one overlapping hunk). Returns the root,
    the branch and the conflict's change id."""
    root = await new_thread(client)
    await turn_ok(client, root, "objective: essay; write: Cycling is healthy.")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "write: Bikes are cheap.")
    await turn_ok(client, side, "write: Bikes are quiet.")
    await checkout(client, root, f"{root}:1")
    await turn_ok(client, root, "write: Lanes make cycling safe.")
    await turn_ok(client, root, "write: Lanes need money.")
    plan = (await merge(client, root, f"{side}:3", preview=True)).json()
    docs = [c for c in plan["changes"] if c["surface"] == "document"]
    assert [c["conflict"] for c in docs] == [True]
    return root, side, docs[0]["id"]


def pick(*lines: tuple[str, int]) -> dict[str, Any]:
    return {"lines": [{"side": side, "n": n} for side, n in lines]}


def paragraphs(content: str) -> list[str]:
    return [line for line in content.split("\n") if line.strip()]


async def test_a_line_pick_keeps_exactly_the_lines_chosen_in_order(
    client: httpx.AsyncClient,
) -> None:
    root, side, change = await two_by_two(client)
    plan = (await merge(client, root, f"{side}:3", preview=True)).json()
    hunk = next(c for c in plan["changes"] if c["id"] == change)
    ours, theirs = hunk["ours"].splitlines(), hunk["theirs"].splitlines()
    # (the base's one line has no line break: the hunk starts with it on both sides)
    opening = ours.index("Cycling is healthy.")
    first_ours = ours.index("Lanes make cycling safe.")
    second_theirs = theirs.index("Bikes are quiet.")
    out = await merged(
        client,
        root,
        f"{side}:3",
        resolutions={
            change: pick(("ours", opening), ("theirs", second_theirs), ("ours", first_ours))
        },
    )
    assert out["node_id"] == f"{root}:4"
    content = (await workspace(client, root))["document"]["content"]
    assert paragraphs(content) == [
        "Cycling is healthy.",
        "Bikes are quiet.",
        "Lanes make cycling safe.",
    ], content
    kinds = {n["id"]: n["kind"] for n in (await graph(client, root))["nodes"]}
    assert kinds[f"{root}:4"] == "merge"


async def test_a_line_pick_can_keep_a_new_paragraph_from_each_side(
    client: httpx.AsyncClient,
) -> None:
    root, side, change = await two_by_two(client)
    plan = (await merge(client, root, f"{side}:3", preview=True)).json()
    hunk = next(c for c in plan["changes"] if c["id"] == change)
    ours, theirs = hunk["ours"].splitlines(), hunk["theirs"].splitlines()
    chosen = [("ours", n) for n, line in enumerate(ours) if "need money" not in line] + [
        ("theirs", n) for n, line in enumerate(theirs) if "cheap" not in line
    ]
    await merged(client, root, f"{side}:3", resolutions={change: pick(*chosen)})
    content = (await workspace(client, root))["document"]["content"]
    assert "Lanes make cycling safe." in content and "Bikes are quiet." in content
    assert "Lanes need money." not in content and "Bikes are cheap." not in content
    assert content.index("Lanes make cycling safe.") < content.index("Bikes are quiet.")


@pytest.mark.parametrize(
    ("resolution", "said"),
    [
        (pick(("theirs", 999)), "not 1000"),
        (pick(("ours", 0), ("ours", 0)), "picked twice"),
        ({"lines": [{"side": "both", "n": 0}]}, None),
        ({"lines": [{"side": "ours", "n": -1}]}, None),
        ({"lines": [{"side": "ours", "n": "0"}]}, None),
        ({"lines": [{"side": "ours", "n": 0}] * 20_001}, None),
        ({"lines": [], "text": "anything"}, None),
    ],
)
async def test_a_bad_line_pick_is_refused_and_writes_nothing(
    client: httpx.AsyncClient, resolution: dict[str, Any], said: str | None
) -> None:
    root, side, change = await two_by_two(client)
    before = await workspace(client, root)
    r = await merge(client, root, f"{side}:3", resolutions={change: resolution})
    assert r.status_code == 422, r.text
    if said is not None:
        assert said in r.json()["message"], r.text
    assert await workspace(client, root) == before
    assert len((await graph(client, root))["nodes"]) == 5


async def test_a_line_pick_is_for_a_document_change_only(client: httpx.AsyncClient) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: one")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "objective: two")
    await checkout(client, root, f"{root}:1")
    await turn_ok(client, root, "objective: three")
    r = await merge(client, root, f"{side}:2", resolutions={"objective": pick(("theirs", 0))})
    assert r.status_code == 422, r.text
    assert "document" in r.json()["message"]
    assert (await workspace(client, root))["objective"] == "three"
