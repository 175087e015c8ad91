"""`POST …/merge` through the public API, on SQLite and PostgreSQL: merge and pick from
a branch, a branch of a branch and a fork; conflicts settled either way; a document
with clean and overlapping hunks; idempotence; undo by checkout; the graph's merge
node and edge; what the next model call sees; preview writes nothing; the guards a
send has (expected head, active turn, the discard guard, drafts)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from langchain_core.messages import HumanMessage, SystemMessage

from haico.agent import runtime as runtime_module
from tests.agent.test_runtime import RecordingModel
from tests.history_helpers import (
    checkout,
    graph,
    history,
    new_thread,
    turn_ok,
    wait_for_active_turn,
    workspace,
)
from tests.sse_client import send_turn


async def merge(
    client: httpx.AsyncClient, thread_id: str, source: str, **body: Any
) -> httpx.Response:
    return await client.post(
        f"/api/conversations/{thread_id}/merge",
        json={"source": source, "mode": body.pop("mode", "merge"), **body},
    )


async def merged(client: httpx.AsyncClient, thread_id: str, source: str, **body: Any) -> Any:
    r = await merge(client, thread_id, source, **body)
    assert r.status_code == 201, r.text
    return r.json()


async def branch(client: httpx.AsyncClient, thread_id: str, from_turn: int) -> str:
    r = await client.post(f"/api/conversations/{thread_id}/branch", json={"from_turn": from_turn})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def family(client: httpx.AsyncClient) -> tuple[str, str]:
    """A root with two turns (objective, a todo) and a branch at 1 with two turns of its
    own (a todo and a preference, then another todo); the root is the working thread."""
    root = await new_thread(client)
    await turn_ok(client, root, "objective: plan the study; todo: read papers")
    await turn_ok(client, root, "todo: draft outline")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "todo: interview users; prefer: short sentences")
    await turn_ok(client, side, "todo: survey")
    back = await checkout(client, root, f"{root}:2")
    assert back.status_code == 200, back.text
    return root, side


def texts(ws: dict[str, Any], surface: str) -> list[str]:
    return [item["text"] for item in ws[surface]]


async def test_merge_brings_a_branch_in_as_one_node_and_checkout_undoes_it(
    client: httpx.AsyncClient,
) -> None:
    root, side = await family(client)
    before = await workspace(client, root)
    preview = await merge(client, root, f"{side}:3", preview=True)
    assert preview.status_code == 200, preview.text
    plan = preview.json()
    assert (plan["mode"], plan["base"], plan["target"]) == ("merge", f"{root}:1", f"{root}:2")
    assert sorted((c["surface"], c["kind"], c["conflict"]) for c in plan["changes"]) == [
        ("preference", "add", False),
        ("todo", "add", False),
        ("todo", "add", False),
    ]
    assert await workspace(client, root) == before  # a preview writes nothing

    out = await merged(client, root, f"{side}:3", label="3.1")
    assert (out["node_id"], out["parent_node_id"]) == (f"{root}:3", f"{root}:2")
    assert out["description"] == "Brought in from 3.1: 1 preference, 2 todos"
    ws = await workspace(client, root)
    assert texts(ws, "todos") == ["read papers", "draft outline", "interview users", "survey"]
    assert texts(ws, "preferences") == ["short sentences"]
    theirs = await workspace(client, side)
    assert {t["uid"] for t in theirs["todos"]} <= {t["uid"] for t in ws["todos"]}
    assert (await history(client, root))["head_turn_id"] == f"{root}:3"

    g = await graph(client, root)
    node = next(n for n in g["nodes"] if n["id"] == f"{root}:3")
    assert (node["kind"], node["state"]) == ("merge", "complete")
    assert node["user_message"] == "Brought in from 3.1: 1 preference, 2 todos"
    assert {"id": f"{side}:3->{root}:3", "kind": "merge"}.items() <= next(
        e for e in g["edges"] if e["kind"] == "merge"
    ).items()
    assert {n["kind"] for n in g["nodes"] if n["id"] != f"{root}:3"} == {"turn"}

    again = await merge(client, root, f"{side}:3")
    assert again.status_code == 422 and again.json()["code"] == "nothing_to_merge", again.text

    undo = await checkout(client, root, f"{root}:2")
    assert undo.status_code == 200, undo.text
    working = undo.json()["working_thread_id"]
    assert texts(await workspace(client, working), "todos") == texts(before, "todos")


async def test_pick_brings_only_the_change_that_node_made(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    out = await merged(client, root, f"{side}:3", mode="pick")
    assert out["plan"]["base"] == f"{side}:2"
    assert out["description"] == "Brought in from 3 (H): 1 todo"
    assert texts(await workspace(client, root), "todos") == [
        "read papers",
        "draft outline",
        "survey",
    ]
    # The other node's change can still be picked; picking again brings nothing.
    await merged(client, root, f"{side}:2", mode="pick")
    again = await merge(client, root, f"{side}:3", mode="pick")
    assert again.json()["code"] == "nothing_to_merge"


async def test_a_conflict_answers_409_with_the_plan_until_resolved(
    client: httpx.AsyncClient,
) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: first; todo: shared")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "objective: from the side; done todo 1")
    await turn_ok(client, root, "objective: from the root")  # the root is working again
    head = (await history(client, root))["head_turn_id"]

    r = await merge(client, root, f"{side}:2")
    assert r.status_code == 409 and r.json()["code"] == "merge_conflict", r.text
    changes = r.json()["data"]["plan"]["changes"]
    assert changes[0] == {
        "id": "objective",
        "surface": "objective",
        "uid": None,
        "kind": "change",
        "base": "first",
        "ours": "from the root",
        "theirs": "from the side",
        "conflict": True,
        "fields": [],
        "conflict_fields": [],
    }
    assert [(c["surface"], c["conflict"]) for c in changes[1:]] == [("todo", False)]
    assert (await history(client, root))["head_turn_id"] == head  # nothing written

    ours = await merged(client, root, f"{side}:2", resolutions={"objective": "ours"})
    ws = await workspace(client, root)
    assert ws["objective"] == "from the root" and ws["todos"][0]["done"] is True
    assert ours["description"].endswith(": 1 todo")
    # Undo, then settle the other way on the restored step (it becomes a branch).
    undo = await checkout(client, root, head)
    assert undo.status_code == 200, undo.text
    draft = undo.json()["working_thread_id"]
    assert (await workspace(client, draft))["objective"] == "from the root"
    await merged(client, draft, f"{side}:2", resolutions={"objective": "theirs"})
    assert (await workspace(client, draft))["objective"] == "from the side"


async def test_a_document_merges_by_line(client: httpx.AsyncClient) -> None:
    root = await new_thread(client)
    body = "".join(f"line {n}\n" for n in range(1, 9))
    put = await client.put(f"/api/conversations/{root}/document", json={"content": body})
    assert put.status_code == 200, put.text
    await turn_ok(client, root, "objective: write")
    side = await branch(client, root, 1)
    theirs = body.replace("line 2\n", "side 2\n").replace("line 7\n", "side 7\n")
    await client.put(f"/api/conversations/{side}/document", json={"content": theirs})
    await turn_ok(client, side, "todo: note")
    # The root's own edit after a turn of its own (edits between turns belong to the
    # turn before them, here the shared one).
    await turn_ok(client, root, "objective: write more")
    ours = body.replace("line 2\n", "root 2\n")
    await client.put(f"/api/conversations/{root}/document", json={"content": ours})

    plan = (await merge(client, root, f"{side}:2", preview=True)).json()
    docs = [c for c in plan["changes"] if c["surface"] == "document"]
    assert [(c["base"], c["ours"], c["theirs"], c["conflict"]) for c in docs] == [
        ("line 2\n", "root 2\n", "side 2\n", True),
        ("line 7\n", "line 7\n", "side 7\n", False),
    ]
    await merged(client, root, f"{side}:2", resolutions={docs[0]["id"]: "theirs"})
    content = (await workspace(client, root))["document"]["content"]
    assert content == theirs


async def test_both_sides_holding_the_same_unsaved_document_store_it_once(
    client: httpx.AsyncClient,
) -> None:
    # The document was edited after the last turn on both threads (not stored as a
    # version yet): the merge stores the target's text (its snapshot) and the source's
    # (its merge base) in one write, the same text twice.
    root = await new_thread(client)
    await turn_ok(client, root, "objective: write")
    text = "".join(f"shared {n}\n" for n in range(40))
    put = await client.put(f"/api/conversations/{root}/document", json={"content": text})
    assert put.status_code == 200, put.text
    side = await branch(client, root, 1)
    await turn_ok(client, side, "todo: from the side")
    out = await merged(client, root, f"{side}:2")
    assert out["description"].endswith(": 1 todo")
    # The merge node's snapshot (the workspace before it) and its merge base both read
    # the stored text back: the view before the merge has the document, and merging
    # again finds nothing new (a missing base text would list the document again).
    assert (await workspace(client, root, as_of=1))["document"]["content"] == text
    assert (await workspace(client, root))["document"]["content"] == text
    assert (await merge(client, root, f"{side}:2")).json()["code"] == "nothing_to_merge"


async def test_removals_become_rejected_decisions_and_artifacts_are_copied(
    client: httpx.AsyncClient,
) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "todo: keep; todo: drop")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "remove todo 2; artifact Notes: what we found")
    await checkout(client, root, f"{root}:1")
    out = await merged(client, root, f"{side}:2")
    assert out["description"].endswith(": 1 todo, 1 artifact")
    ws = await workspace(client, root)
    assert texts(ws, "todos") == ["keep"]
    assert [(r["surface"], r["text"], r["rejected_after_turn"]) for r in ws["rejected"]] == [
        ("todo", "drop", 2)
    ]
    (art,) = ws["artifacts"]
    assert (art["title"], art["turn_index"]) == ("Notes", 2)
    got = await client.get(f"/api/conversations/{root}/artifacts/{art['id']}")
    assert got.json()["content"] == "what we found"
    # As of the turn before the merge, the root had neither.
    before = await workspace(client, root, as_of=1)
    assert texts(before, "todos") == ["keep", "drop"] and before["artifacts"] == []
    assert (await merge(client, root, f"{side}:2")).json()["code"] == "nothing_to_merge"


async def test_a_pick_reads_the_artifacts_its_base_already_had(
    client: httpx.AsyncClient,
) -> None:
    # The pick's base is a stored snapshot of a thread with an artifact, its source the
    # thread's latest node (its live rows): the artifact is in both, so picking it into
    # another conversation brings the todo only (a base read without its artifacts
    # would bring the artifact too).
    notes = await new_thread(client)
    await turn_ok(client, notes, "artifact Notes: what we found")
    await turn_ok(client, notes, "todo: follow up")
    other = await new_thread(client)
    await turn_ok(client, other, "objective: elsewhere")
    out = await merged(client, other, f"{notes}:2", mode="pick")
    assert out["plan"]["base"] == f"{notes}:1"
    assert out["description"].endswith(": 1 todo"), out["description"]
    ws = await workspace(client, other)
    assert texts(ws, "todos") == ["follow up"] and ws["artifacts"] == []


async def test_from_a_branch_of_a_branch_and_from_a_fork(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    deeper = await branch(client, side, 2)
    await turn_ok(client, deeper, "prefer: cite sources")
    await checkout(client, root, f"{root}:2")
    out = await merged(client, root, f"{deeper}:3")
    assert out["plan"]["base"] == f"{root}:1"
    assert texts(await workspace(client, root), "preferences") == [
        "short sentences",
        "cite sources",
    ]

    fork = await client.post(f"/api/conversations/{root}/fork", json={"from_turn": 2})
    assert fork.status_code == 201, fork.text
    forked = fork.json()["thread_id"]
    await turn_ok(client, forked, "todo: from the fork")
    await checkout(client, root, f"{root}:3")
    out = await merged(client, root, f"{forked}:3")
    assert out["plan"]["base"] == f"{root}:2"
    assert texts(await workspace(client, root), "todos")[-1] == "from the fork"
    g = await graph(client, root)
    assert not any(e["source"].startswith(forked) for e in g["edges"])  # not drawn


async def test_a_second_merge_of_a_grown_branch_takes_the_first_as_its_base(
    client: httpx.AsyncClient,
) -> None:
    root = await new_thread(client)
    body = "".join(f"line {n}\n" for n in range(1, 6))
    await client.put(f"/api/conversations/{root}/document", json={"content": body})
    await turn_ok(client, root, "objective: go")
    side = await branch(client, root, 1)
    await client.put(
        f"/api/conversations/{side}/document", json={"content": body.replace("3\n", "3 a\n")}
    )
    await turn_ok(client, side, "todo: one")
    await checkout(client, root, f"{root}:1")
    await merged(client, root, f"{side}:2")
    await turn_ok(client, side, "todo: two")
    await client.put(
        f"/api/conversations/{side}/document", json={"content": body.replace("3\n", "3 b\n")}
    )
    await checkout(client, root, f"{root}:2")
    out = await merged(client, root, f"{side}:3")
    assert out["plan"]["base"] == f"{side}:2"
    assert [c["conflict"] for c in out["plan"]["changes"]] == [False, False]
    assert (await workspace(client, root))["document"]["content"] == body.replace("3\n", "3 b\n")


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> RecordingModel:
    model = RecordingModel()
    monkeypatch.setattr(runtime_module, "make_chat_model", lambda _settings: model)
    return model


async def test_the_next_model_call_sees_the_merge_as_a_note(
    recorder: RecordingModel, client: httpx.AsyncClient
) -> None:
    root, side = await family(client)
    await merged(client, root, f"{side}:3", label="3.1")
    recorder.calls.clear()
    await turn_ok(client, root, "what changed?")
    first = recorder.calls[0]
    assert isinstance(first[0], SystemMessage)
    assert "Brought in from 3.1: 1 preference, 2 todos" in str(first[0].content)
    assert not any("Brought in" in str(m.content) for m in first if isinstance(m, HumanMessage))
    recorder.calls.clear()
    await turn_ok(client, root, "and now?")
    assert "Brought in from" not in str(recorder.calls[0][0].content)  # until the next turn
    messages = (await client.get(f"/api/conversations/{root}/messages")).json()
    assert not any("Brought in" in m["content"] for m in messages)  # not in the transcript


async def test_the_guards_of_a_send(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    stale = await merge(client, root, f"{side}:3", expected_head_turn_id=f"{root}:1")
    assert stale.status_code == 409 and stale.json()["code"] == "conflict", stale.text

    # An edited draft would be lost: refused unless forced.
    draft = (await checkout(client, root, f"{root}:1")).json()["working_thread_id"]
    edited = await client.put(f"/api/conversations/{draft}/objective", json={"text": "mine"})
    assert edited.status_code == 200
    r = await merge(client, root, f"{side}:3")
    assert r.status_code == 409 and r.json()["code"] == "checkout_would_discard_changes"
    assert (await history(client, root))["working_thread_id"] == draft
    out = await merged(client, root, f"{side}:3", force=True, expected_head_turn_id=f"{root}:1")
    assert out["node_id"] == f"{root}:3"

    # Into the working draft itself: it becomes a branch with the same id, as on a send.
    draft = (await checkout(client, root, f"{root}:1")).json()["working_thread_id"]
    out = await merged(client, draft, f"{side}:3")
    assert out["node_id"] == f"{draft}:2"
    assert (await history(client, root))["head_turn_id"] == f"{draft}:2"

    # During a turn.
    sending = asyncio.create_task(send_turn(client, root, "wait: 3"))
    await wait_for_active_turn(client, root)
    busy = await merge(client, root, f"{side}:2")
    assert busy.status_code == 409 and busy.json()["code"] == "turn_in_progress", busy.text
    await client.post(f"/api/conversations/{root}/turns/cancel")
    await sending


async def test_bad_requests(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    assert (await merge(client, root, "nonsense")).status_code == 422
    assert (await merge(client, root, f"{side}:9")).status_code == 404
    unknown = await merge(client, root, f"{side}:3", resolutions={"todo:nope": "ours"})
    assert unknown.status_code == 422 and unknown.json()["code"] == "invalid_input"
    missing = await client.post(f"/api/conversations/{root}/merge", json={"source": f"{side}:3"})
    assert missing.status_code == 422  # the mode is required


async def test_an_exported_family_keeps_its_merge_nodes(client: httpx.AsyncClient) -> None:
    root, side = await family(client)
    await merged(client, root, f"{side}:3")
    doc = (await client.get(f"/api/conversations/{root}/export")).json()
    merge_nodes = [n for n in doc["nodes"] if n["kind"] == "merge"]
    assert [n["merged_from"] for n in merge_nodes] == [f"{side}:3"]
    r = await client.post("/api/conversations/import", json=doc)
    assert r.status_code == 201, r.text
    g = await graph(client, r.json()["thread_id"])
    (node,) = [n for n in g["nodes"] if n["kind"] == "merge"]
    (edge,) = [e for e in g["edges"] if e["kind"] == "merge"]
    assert edge["target"] == node["id"] and edge["source"].endswith(":3")
    assert edge["source"] != f"{side}:3"  # the imported family's own copy of the source


async def test_an_imported_family_keeps_its_merge_base(client: httpx.AsyncClient) -> None:
    """The source's workspace as a merge brought it in travels with the export: in the
    imported family the source's later changes merge against it, and merging the same
    source again brings nothing (against the shared ancestor instead, the target's own
    later edit of the merged objective would be a conflict)."""
    root = await new_thread(client)
    body = "".join(f"line {n}\n" for n in range(1, 6))
    await client.put(f"/api/conversations/{root}/document", json={"content": body})
    await turn_ok(client, root, "objective: start; todo: shared")
    side = await branch(client, root, 1)
    await turn_ok(client, side, "objective: from the side; todo: side todo")
    await checkout(client, root, f"{root}:1")
    await merged(client, root, f"{side}:2")
    await turn_ok(client, root, "objective: ours after the merge")

    doc = (await client.get(f"/api/conversations/{root}/export")).json()
    (node,) = [n for n in doc["nodes"] if n["kind"] == "merge"]
    base = node["merge_base"]
    assert base["objective"] == "from the side" and base["content"] == body
    assert [t["text"] for t in base["todos"]] == ["shared", "side todo"]
    r = await client.post("/api/conversations/import", json=doc)
    assert r.status_code == 201, r.text
    copy = r.json()["thread_id"]
    again = await client.get(f"/api/conversations/{copy}/export")
    assert [n["merge_base"] for n in again.json()["nodes"] if n["kind"] == "merge"] == [base]

    g = await graph(client, copy)
    (edge,) = [e for e in g["edges"] if e["kind"] == "merge"]
    copied_side = edge["source"]
    nothing = await merge(client, copy, copied_side)
    assert nothing.status_code == 422 and nothing.json()["code"] == "nothing_to_merge", nothing.text
    # Without the record the base would be the shared ancestor: the same request on the
    # original and on the copy gives the same (empty) answer.
    assert (await merge(client, root, f"{side}:2")).json()["code"] == "nothing_to_merge"
