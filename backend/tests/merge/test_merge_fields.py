"""Conflicts on preferences and todos are settled field by field (`<change id>.<field>`
resolutions), through the planner and through `POST …/merge` on SQLite and
PostgreSQL: a field only the source changed comes in, each field both changed is
chosen on its own, and every field in conflict needs a choice."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from haico.services.merge.plan import Item, Side, plan
from haico.services.merge.result import UnknownChange, Unresolved, merge_result
from tests.history_helpers import checkout, new_thread, turn_ok, workspace
from tests.merge.test_merge_api import branch, merge, merged

API = "/api/conversations"


def todo(text: str, *, done: bool = False, depth: int = 0) -> Item:
    return Item("t1", {"text": text, "done": done, "depth": depth})


def test_the_planner_names_the_fields_in_conflict_and_takes_choices_per_field() -> None:
    base = Side(todos=(todo("draft"),))
    ours = Side(todos=(todo("draft A", depth=1),))
    theirs = Side(todos=(todo("draft B", done=True, depth=2),))
    p = plan(base, ours, theirs)
    (c,) = p.changes
    assert (c.id, c.conflict, c.clashes) == ("todo:t1", True, ("text", "depth"))
    assert set(c.fields) == {"text", "done", "depth"}
    with pytest.raises(Unresolved):  # one of the two fields in conflict is still open
        merge_result(p, ours, theirs, {"todo:t1.text": "theirs"})
    got = merge_result(p, ours, theirs, {"todo:t1.text": "theirs", "todo:t1.depth": "ours"})
    assert got.side.todos == (Item("t1", {"text": "draft B", "done": True, "depth": 1}),)
    # a clean field can be declined on its own too
    got = merge_result(
        p, ours, theirs, {"todo:t1.text": "ours", "todo:t1.depth": "ours", "todo:t1.done": "ours"}
    )
    assert got.side.todos == ours.todos and got.brought == []
    # the whole change still settles every field at once
    got = merge_result(p, ours, theirs, {"todo:t1": "ours", "todo:t1.done": "theirs"})
    assert got.side.todos == (Item("t1", {"text": "draft A", "done": True, "depth": 1}),)
    for bad in ("todo:t1.colour", "todo:t2.text", "todo:t1"[:-1] + ".text"):
        with pytest.raises(UnknownChange):
            merge_result(p, ours, theirs, {bad: "ours"})


def test_a_removed_item_changed_by_the_source_is_settled_whole() -> None:
    base = Side(todos=(todo("draft"),))
    theirs = Side(todos=(todo("draft B"),))
    (c,) = plan(base, Side(), theirs).changes
    assert c.conflict and c.clashes == ()
    with pytest.raises(UnknownChange):
        merge_result(plan(base, Side(), theirs), Side(), theirs, {"todo:t1.text": "theirs"})


async def _todo(client: httpx.AsyncClient, tid: str) -> dict[str, Any]:
    ws = await workspace(client, tid)
    (item,) = [t for t in ws["todos"] if t["text"].startswith("draft")]
    return dict(item)


async def test_field_choices_through_the_api(client: httpx.AsyncClient) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "todo: draft")
    side = await branch(client, root, 1)
    theirs = await _todo(client, side)
    r = await client.patch(
        f"{API}/{side}/todos/{theirs['id']}", json={"text": "draft B", "done": True, "depth": 2}
    )
    assert r.status_code == 200, r.text
    await turn_ok(client, side, "objective: side")
    await checkout(client, root, f"{root}:1")
    # a step of its own first: a hand edit at the tip belongs to the tip's node
    await turn_ok(client, root, "prefer: short")
    ours = await _todo(client, root)
    r = await client.patch(f"{API}/{root}/todos/{ours['id']}", json={"text": "draft A", "depth": 1})
    assert r.status_code == 200, r.text

    preview = await merge(client, root, f"{side}:2", preview=True)
    (conflict,) = [c for c in preview.json()["changes"] if c["conflict"]]
    cid = conflict["id"]
    assert conflict["conflict_fields"] == ["text", "depth"] and "done" in conflict["fields"]
    half = await merge(client, root, f"{side}:2", resolutions={f"{cid}.text": "theirs"})
    assert half.status_code == 409 and half.json()["code"] == "merge_conflict", half.text
    assert (await _todo(client, root))["text"] == "draft A"  # nothing written
    bad = await merge(client, root, f"{side}:2", resolutions={f"{cid}.colour": "theirs"})
    assert bad.status_code == 422 and bad.json()["code"] == "invalid_input"

    await merged(
        client, root, f"{side}:2", resolutions={f"{cid}.text": "theirs", f"{cid}.depth": "ours"}
    )
    now = await _todo(client, root)
    assert (now["uid"], now["text"], now["done"], now["depth"]) == (ours["uid"], "draft B", True, 1)
    assert (await workspace(client, root))["objective"] == "side"
