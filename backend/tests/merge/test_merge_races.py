"""Two merges asserting the same expected head, many rounds, on PostgreSQL (the race
harness of tests/maintenance/test_race_rounds.py and its `HAICO_RACE_ROUNDS` knob): exactly one
wins every round, the other answers 409 `conflict`, the head is the winner's node,
and the brought items are there once."""

from __future__ import annotations

import asyncio
import os

import httpx
import pytest
from fastapi import FastAPI

from haico.services.maintenance import consistency
from tests.helpers import db_of
from tests.history_helpers import checkout, history, new_thread, turn_ok, workspace

pytestmark = pytest.mark.parametrize("backend", ["postgres"], indirect=True)

ROUNDS = int(os.environ.get("HAICO_RACE_ROUNDS", "200"))


async def test_two_merges_with_one_expected_head(app: FastAPI, client: httpx.AsyncClient) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "objective: race")
    r = await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
    side = r.json()["thread_id"]
    await turn_ok(client, side, "todo: first")
    assert (await checkout(client, root, f"{root}:1")).status_code == 200
    node = f"{root}:1"
    for i in range(ROUNDS):
        # Something new on the branch every round (its live rows: the work after its tip).
        added = await client.post(f"/api/conversations/{side}/todos", json={"text": f"r{i}"})
        assert added.status_code == 201, added.text
        h = await history(client, root)
        # The head is the last round's winner, on the thread (its working one).
        assert (h["head_turn_id"], h["working_thread_id"]) == (node, root), (i, h)
        head = h["head_turn_id"]
        answers = await asyncio.gather(
            *(
                client.post(
                    f"/api/conversations/{root}/merge",
                    json={"source": f"{side}:2", "mode": "merge", "expected_head_turn_id": head},
                )
                for _ in range(2)
            )
        )
        won = [a for a in answers if a.status_code == 201]
        assert len(won) == 1, (i, [a.text for a in answers])
        lost = next(a for a in answers if a.status_code != 201)
        assert lost.status_code == 409 and lost.json()["code"] == "conflict", (i, lost.text)
        node = won[0].json()["node_id"]
        assert node == f"{root}:{i + 2}" and won[0].json()["parent_node_id"] == head
    assert (await history(client, root))["head_turn_id"] == node
    todos = [t["text"] for t in (await workspace(client, root))["todos"]]
    assert todos == ["first", *(f"r{i}" for i in range(ROUNDS))]
    # This family only: tests before this one in the process may have left rows
    # written by hand (test_graph's half-built branches) that the check would report.
    report = await consistency.check(db_of(app), None, max_age_seconds=3600, roots=[root])
    assert report.ok, report.to_json()
