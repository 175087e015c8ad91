"""`POST …/merge/{k}/revert` through the public API, on SQLite and PostgreSQL: undoing
a bring-in makes a new step whose workspace is the one before it (the merge step
stays in the history, the head moves on), the same work can then be brought in
again; only the head can be undone (409 naming the steps), only a bring-in (422); a
viewer or commenter is refused, an editor may; a failure at any step of the write
leaves nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.db.faults import Step
from tests.helpers import armed_faults, db_of
from tests.history_helpers import (
    checkout,
    graph,
    history,
    log_size,
    new_thread,
    turn_ok,
    workspace,
)
from tests.merge.test_merge_api import branch, family, merged, texts
from tests.share_helpers import grantee, new_family, turn

MERGE_STEPS = [Step.MERGE_PLAN, Step.MERGE_NODE, Step.MERGE_APPLY, Step.MERGE_HEAD]


async def revert(client: httpx.AsyncClient, thread_id: str, k: int, **kw: Any) -> httpx.Response:
    return await client.post(f"/api/conversations/{thread_id}/merge/{k}/revert", json={}, **kw)


def shown(ws: dict[str, Any]) -> dict[str, Any]:
    """What a user sees of a workspace (ids aside: rows may be written anew)."""
    return {
        "objective": ws["objective"],
        "document": ws["document"],
        "preferences": [(p["uid"], p["text"], p["locked"]) for p in ws["preferences"]],
        "todos": [(t["uid"], t["text"], t["done"], t["depth"]) for t in ws["todos"]],
        "rejected": sorted(r["uid"] for r in ws["rejected"]),
    }


async def test_undo_makes_a_step_with_the_workspace_before_the_bring_in(
    client: httpx.AsyncClient,
) -> None:
    root, side = await family(client)
    before = await workspace(client, root)
    out = await merged(client, root, f"{side}:3", label="3.1")
    after = await workspace(client, root)
    assert texts(after, "todos") != texts(before, "todos")

    r = await revert(client, root, 3)
    assert r.status_code == 201, r.text
    undo = r.json()
    assert (undo["node_id"], undo["parent_node_id"], undo["reverted"]) == (
        f"{root}:4",
        f"{root}:3",
        f"{root}:3",
    )
    assert undo["description"] == f"Undid step 3: {out['description']}"
    assert shown(await workspace(client, root)) == shown(before)
    assert (await history(client, root))["head_turn_id"] == f"{root}:4"

    # Nothing lost: the merge step keeps what it brought, and the graph shows both.
    assert shown(await workspace(client, root, as_of=3)) == shown(after)
    g = await graph(client, root)
    nodes = {n["id"]: n for n in g["nodes"]}
    assert nodes[f"{root}:3"]["kind"] == "merge"
    assert (nodes[f"{root}:4"]["kind"], nodes[f"{root}:4"]["user_message"]) == (
        "merge",
        undo["description"],
    )
    assert not [e for e in g["edges"] if e["target"] == f"{root}:4" and e["kind"] == "merge"]
    detail = (await client.get(f"/api/conversations/{root}/nodes/4")).json()
    assert detail["user_message"].startswith("Undid step 3")
    assert {e["origin"] for e in detail["edits"]} == {"merge"}

    # The undone work can be brought in again (the undone merge is no base).
    again = await merged(client, root, f"{side}:3", label="3.1")
    assert again["node_id"] == f"{root}:5"
    assert shown(await workspace(client, root))["todos"] == shown(after)["todos"]


async def test_undo_restores_the_document_and_what_the_bring_in_rejected(
    client: httpx.AsyncClient,
) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: essay; write: Cycling is healthy.; todo: one")
    side = await branch(client, root, 1)
    todo = (await workspace(client, side))["todos"][0]
    removed = await client.delete(f"/api/conversations/{side}/todos/{todo['id']}")
    assert removed.status_code == 204, removed.text
    await turn_ok(client, side, "write: Bikes are cheap.; objective: bikes")
    await checkout(client, root, f"{root}:1")
    before = await workspace(client, root)
    await merged(client, root, f"{side}:2")
    after = await workspace(client, root)
    assert after["todos"] == [] and [r["uid"] for r in after["rejected"]] == [todo["uid"]]
    assert "Bikes are cheap." in after["document"]["content"]

    r = await revert(client, root, 2)
    assert r.status_code == 201, r.text
    now = await workspace(client, root)
    assert shown(now) == shown(before)
    assert now["document"]["content"] == "Cycling is healthy."
    assert shown(await workspace(client, root, as_of=2)) == shown(after)


async def test_only_the_head_can_be_undone(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    await merged(client, root, f"{side}:3")
    await turn_ok(client, root, "todo: after the merge")
    before = await workspace(client, root)
    r = await revert(client, root, 3)
    assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    message = r.json()["message"]
    assert "step 3" in message and "step 4" in message and root not in message, message
    assert (await history(client, root))["head_turn_id"] == f"{root}:4"
    assert await workspace(client, root) == before

    # Restored to the merge step: the head is it, but the path goes on after it.
    assert (await checkout(client, root, f"{root}:3")).status_code == 200
    r = await revert(client, root, 3)
    assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    assert len((await graph(client, root))["nodes"]) == 6


async def test_only_a_bring_in_can_be_undone(client: httpx.AsyncClient) -> None:
    root, _ = await family(client)
    r = await revert(client, root, 2)
    assert r.status_code == 422, r.text
    assert "step 2 is not a bring-in" in r.json()["message"]
    r = await revert(client, root, 9)
    assert r.status_code == 404 and r.json()["code"] == "invalid_turn", r.text
    assert (await history(client, root))["head_turn_id"] == f"{root}:2"


async def test_a_stale_expected_head_is_refused(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    await merged(client, root, f"{side}:3")
    r = await client.post(
        f"/api/conversations/{root}/merge/3/revert", json={"expected_head_turn_id": f"{root}:2"}
    )
    assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
    assert (await history(client, root))["head_turn_id"] == f"{root}:3"


class TestRoles:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"auth": "token"}

    async def test_a_viewer_or_commenter_is_refused_an_editor_may(
        self, app: FastAPI, client: httpx.AsyncClient
    ) -> None:
        fam = await new_family(app)
        tid, h = fam.tid, fam.owner_h
        assert await turn(client, tid, "objective: plan; todo: one", h) == 200
        r = await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1}, headers=h)
        side = r.json()["thread_id"]
        assert await turn(client, side, "todo: two", h) == 200
        r = await client.post(
            f"/api/conversations/{tid}/checkout", json={"turn_id": f"{tid}:1"}, headers=h
        )
        assert r.status_code == 200, r.text
        r = await client.post(
            f"/api/conversations/{tid}/merge",
            json={"source": f"{side}:2", "mode": "merge"},
            headers=h,
        )
        assert r.status_code == 201, r.text
        for role in ("viewer", "commenter", "link-viewer", "link-commenter"):
            refused = await revert(client, tid, 2, headers=await grantee(app, client, fam, role))
            assert refused.status_code == 403, (role, refused.text)
        stranger = await grantee(app, client, await new_family(app), "editor")
        assert (await revert(client, tid, 2, headers=stranger)).status_code == 403
        editor = await grantee(app, client, fam, "editor")
        r = await revert(client, tid, 2, headers=editor)
        assert r.status_code == 201, r.text
        node = (await client.get(f"/api/conversations/{tid}/nodes/3", headers=h)).json()
        assert node["author"] is not None


@pytest.fixture
def faults(app: FastAPI) -> Iterator[dict[str, Any]]:
    with armed_faults(db_of(app), "step") as armed:
        yield armed


@pytest.mark.parametrize("step", MERGE_STEPS)
async def test_a_failure_at_any_step_leaves_nothing(
    app: FastAPI, client: httpx.AsyncClient, faults: dict[str, Any], step: Step
) -> None:
    root, side = await family(client)
    await merged(client, root, f"{side}:3")
    ws, h, g = await workspace(client, root), await history(client, root), await graph(client, root)
    seq = await log_size(app, root)
    faults["seen"].clear()
    faults["step"] = step
    r = await revert(client, root, 3)
    assert r.status_code == 500, r.text
    assert step in faults["seen"]
    faults["step"] = None
    assert await workspace(client, root) == ws
    assert await history(client, root) == h
    assert await graph(client, root) == g
    assert await log_size(app, root) == seq
    # The same undo then goes through.
    r = await revert(client, root, 3)
    assert r.status_code == 201, r.text
    assert faults["seen"][-4:] == MERGE_STEPS


async def test_undo_of_a_first_step_bring_in_empties_the_workspace(
    client: httpx.AsyncClient,
) -> None:
    other = await new_thread(client)
    await turn_ok(client, other, "objective: elsewhere; todo: borrowed; write: A text.")
    root = await new_thread(client)
    before = await workspace(client, root)
    assert (await merged(client, root, f"{other}:1"))["node_id"] == f"{root}:1"
    r = await revert(client, root, 1)
    assert r.status_code == 201, r.text
    assert r.json()["parent_node_id"] == f"{root}:1"
    now = await workspace(client, root)
    # A document the bring-in made stays, empty (the studio shows the two alike).
    assert before["document"] is None
    assert now["document"] == {"title": "", "content": ""}
    assert shown({**now, "document": None}) == shown(before)
