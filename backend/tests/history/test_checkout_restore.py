"""What a checkout to an interior node restores, part by part, on both databases.

The draft a checkout creates is written in one statement on PostgreSQL and through
the general path on SQLite; either way its workspace must be the node's, exactly as
an `as_of_turn` read shows it, and later changes of the source must stay out.
"""

from __future__ import annotations

from typing import Any

import httpx

from tests.history_helpers import checkout, new_thread, turn_ok, without_ids, workspace


async def _delete(client: httpx.AsyncClient, tid: str, surface: str, text: str) -> None:
    items = (await workspace(client, tid))[surface]
    (item,) = [i for i in items if i["text"] == text]
    r = await client.delete(f"/api/conversations/{tid}/{surface}/{item['id']}")
    assert r.status_code == 204, r.text


def _texts(ws: dict[str, Any], surface: str) -> list[str]:
    return [i["text"] for i in ws[surface]]


async def test_an_interior_checkout_restores_every_part_of_the_workspace(
    client: httpx.AsyncClient,
) -> None:
    tid = await new_thread(client)
    await turn_ok(
        client,
        tid,
        "objective: first aim; title: Notes; write: one; prefer: short; prefer: cited; "
        "lock preference 2; todo: read; subtodo: skim; todo: write; done todo 1; "
        "artifact Plan: step one",
    )
    # Rejected after turn 1: kept by a restore at turn 2.
    await _delete(client, tid, "todos", "write")
    await turn_ok(client, tid, "write: two; prefer: plain; artifact Draft: step two")
    # An edit between turns 2 and 3 is part of the workspace after turn 2 (the one
    # turn 3 started from).
    await _delete(client, tid, "preferences", "short")
    # Everything from turn 3 on must stay out of a restore at turn 2.
    await turn_ok(client, tid, "objective: later aim; write: three; artifact Late: step three")
    await _delete(client, tid, "preferences", "cited")

    r = await checkout(client, tid, f"{tid}:2")
    assert r.status_code == 200, r.text
    draft = r.json()["working_thread_id"]
    assert draft != tid
    restored = await workspace(client, draft)
    as_of = await workspace(client, tid, as_of=2)
    assert without_ids(restored) == without_ids(as_of)

    assert restored["objective"] == "first aim"
    assert restored["document"]["title"] == "Notes"
    assert restored["document"]["content"] == "one\n\ntwo"
    assert _texts(restored, "preferences") == ["cited", "plain"]
    assert [p["locked"] for p in restored["preferences"]] == [True, False]
    assert _texts(restored, "todos") == ["read", "skim"]
    assert [(t["done"], t["depth"]) for t in restored["todos"]] == [(True, 0), (False, 1)]
    assert [(r["surface"], r["text"], r["rejected_after_turn"]) for r in restored["rejected"]] == [
        ("todo", "write", 1),
        ("preference", "short", 2),
    ]
    assert [a["title"] for a in restored["artifacts"]] == ["Plan", "Draft"]

    # The draft is a workspace of its own: editing it leaves the source as it was.
    r = await client.put(f"/api/conversations/{draft}/objective", json={"text": "edited"})
    assert r.status_code == 200
    source = await workspace(client, tid)
    assert source["objective"] == "later aim"
    assert _texts(source, "preferences") == ["plain"]
    assert len(source["rejected"]) == 3
    assert [a["title"] for a in source["artifacts"]] == ["Plan", "Draft", "Late"]
