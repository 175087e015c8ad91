"""The aligned comparison of two paths, after replays: step pairs from the shared
node down with their Comparison, both replies, the ledger's usage and a total per
side; a missing side is null. On SQLite and PostgreSQL."""

from __future__ import annotations

import uuid

import httpx
from fastapi import FastAPI

from haico.services.access import users
from haico.services.families import conversations
from tests.helpers import db_of
from tests.history_helpers import new_thread, turn_ok
from tests.whatif_helpers import API, make_profile, wait_job

STEPS = ["objective: trip; todo: book", "how are we doing?", "todo: pack"]


async def _replayed(client: httpx.AsyncClient, tid: str, a: int, b: int, pid: str) -> list[str]:
    body = {"from_node": f"{tid}:{a}", "to_node": f"{tid}:{b}", "profile_id": pid}
    r = await client.post(f"{API}/{tid}/replay", json=body)
    assert r.status_code == 202, r.text
    job = await wait_job(client, r.json()["id"])
    return list(job["thread_ids"])


async def test_compare_paths_pairs_steps_from_the_fork(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await new_thread(client)
    for content in STEPS:
        await turn_ok(client, tid, content)
    p = await make_profile(client, name="other", params={"seed": 3})
    (whole,) = await _replayed(client, tid, 1, 3, p["id"])

    r = await client.get(f"{API}/{tid}/compare-paths", params={"a": f"{tid}:3", "b": f"{whole}:3"})
    assert r.status_code == 200, r.text
    got = r.json()
    assert got["fork"] is None  # replayed from the very start: nothing shared
    assert [(x["a"], x["b"]) for x in got["pairs"]] == [
        (f"{tid}:{k}", f"{whole}:{k}") for k in (1, 2, 3)
    ]
    for k, pair in enumerate(got["pairs"], start=1):
        assert pair["a_step"]["user_message"] == pair["b_step"]["user_message"] == STEPS[k - 1]
        assert pair["a_step"]["reply"] != pair["b_step"]["reply"]
        assert pair["b_step"]["provenance"]["profile_id"] == p["id"]
        assert pair["a_step"]["provenance"]["duration_ms"] is not None
        cmp = pair["comparison"]
        assert cmp["a"]["node_id"] == pair["a"] and cmp["b"]["node_id"] == pair["b"]
        assert cmp["objective"]["changed"] is False  # the same workspace, step by step
    totals = got["totals"]
    assert totals["a"]["steps"] == totals["b"]["steps"] == 3
    assert totals["b"]["output_tokens"] > 0 and totals["b"]["tokens_estimated"] is True

    # one alternative of step 2: the pair after it has only a's side
    (alt,) = await _replayed(client, tid, 2, 2, "default")
    got = (
        await client.get(f"{API}/{tid}/compare-paths", params={"a": f"{tid}:3", "b": f"{alt}:2"})
    ).json()
    assert got["fork"] == f"{tid}:1"
    assert [(x["a"], x["b"]) for x in got["pairs"]] == [
        (f"{tid}:2", f"{alt}:2"),
        (f"{tid}:3", None),
    ]
    assert got["pairs"][1]["comparison"] is None and got["pairs"][1]["b_step"] is None
    assert got["totals"]["a"]["steps"] == 2 and got["totals"]["b"]["steps"] == 1

    # the caller's nodes only
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    r = await client.get(
        f"{API}/{tid}/compare-paths", params={"a": f"{tid}:1", "b": f"{foreign.thread_id}:1"}
    )
    assert r.status_code == 403
    r = await client.get(f"{API}/{tid}/compare-paths", params={"a": f"{tid}:9", "b": f"{tid}:1"})
    assert r.status_code == 404
    r = await client.get(f"{API}/{tid}/compare-paths", params={"a": "x", "b": f"{tid}:1"})
    assert r.status_code == 422
