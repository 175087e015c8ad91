"""`haico replay THREAD FROM TO --profile NAME --repeats N`, run as the real console
script against a fresh database, checked through the real API on the same database
(the service behind it is tested on both backends in tests/whatif/test_whatif_replay.py)."""

from __future__ import annotations

import json

import pytest

from tests.history_helpers import new_thread, turn_ok
from tests.ledger.test_research_cli import api, haico
from tests.whatif_helpers import make_profile, node

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


@pytest.fixture
def env(server_env: dict[str, str]) -> dict[str, str]:
    return {**server_env, "HAICO_SECRET_KEY": "test-secret"}


async def test_replay_from_the_command_line(env: dict[str, str]) -> None:
    done = await haico(env, "migrate")
    assert done.returncode == 0, done.stderr
    async with api(env) as client:
        tid = await new_thread(client)
        await turn_ok(client, tid, "todo: a")
        await turn_ok(client, tid, "todo: b")
        await make_profile(client, name="seeded", params={"seed": 2})

    done = await haico(
        env, "replay", tid, f"{tid}:1", f"{tid}:2", "--profile", "seeded", "--repeats", "2"
    )
    assert done.returncode == 0, done.stderr
    job = json.loads(done.stdout)
    assert job["state"] == "done" and job["progress"] == {"done": 4, "total": 4}
    assert "0/4 steps" in done.stderr and "done (4/4 steps)" in done.stderr
    async with api(env) as client:
        for branch in job["thread_ids"]:
            ws = (await client.get(f"/api/conversations/{branch}/workspace")).json()
            assert [t["text"] for t in ws["todos"]] == ["a", "b"]
            assert (await node(client, branch, 2))["reply"].startswith("Noted. (seed 2)")

    bad = await haico(env, "replay", tid, f"{tid}:2", f"{tid}:1", "--profile", "seeded")
    assert bad.returncode == 1 and "invalid_input" in bad.stderr
    unknown = await haico(env, "replay", tid, f"{tid}:1", f"{tid}:2", "--profile", "nope")
    assert unknown.returncode == 1 and "no profile named 'nope'" in unknown.stderr
