"""`haico merge THREAD SOURCE [--pick] [--preview]`, run as the real console script
against a fresh SQLite database, checked through the real API on the same database
(the service behind it is tested on both backends in tests/merge/test_merge_api.py)."""

from __future__ import annotations

import json

import pytest

from tests.history_helpers import checkout, new_thread, turn_ok, workspace
from tests.ledger.test_research_cli import api, haico

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@pytest.fixture
def env(server_env: dict[str, str]) -> dict[str, str]:
    return {**server_env, "HAICO_SECRET_KEY": "test-secret"}


async def test_merge_and_pick_from_the_command_line(env: dict[str, str]) -> None:
    done = await haico(env, "migrate")
    assert done.returncode == 0, done.stderr
    async with api(env) as client:
        root = await new_thread(client)
        await turn_ok(client, root, "objective: one; todo: a")
        r = await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
        side = r.json()["thread_id"]
        await turn_ok(client, side, "todo: b")
        await turn_ok(client, side, "todo: c; prefer: brief")
        assert (await checkout(client, root, f"{root}:1")).status_code == 200

    done = await haico(env, "merge", root, f"{side}:3", "--pick", "--preview")
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert (plan["mode"], plan["base"]) == ("pick", f"{side}:2")
    assert sorted(c["surface"] for c in plan["changes"]) == ["preference", "todo"]

    done = await haico(env, "merge", root, f"{side}:3", "--pick")
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["node_id"] == f"{root}:2" and out["merged_from"] == f"{side}:3"
    async with api(env) as client:
        ws = await workspace(client, root)
        assert [t["text"] for t in ws["todos"]] == ["a", "c"]
        # What the command did is what the API does: the same pick again brings nothing.
        again = await client.post(
            f"/api/conversations/{root}/merge", json={"source": f"{side}:3", "mode": "pick"}
        )
        assert again.json()["code"] == "nothing_to_merge"
