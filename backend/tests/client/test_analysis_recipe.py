"""docs/analysis.md's notebook recipe, run as written (only its server address is this
test's) against a live server with a conversation of two steps and a named branch:
it connects, replays, waits, and draws both charts, per branch and per profile."""

from __future__ import annotations

import asyncio
import contextlib
import io
import os
import re
from pathlib import Path

from haico.client import Client
from tests.server import Server

DOC = Path(__file__).resolve().parents[3] / "docs" / "analysis.md"
ADDRESS = '"http://127.0.0.1:8000"'


def recipe(url: str) -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    [block] = [b for b in blocks if "haico.client" in b]
    assert ADDRESS in block
    return block.replace(ADDRESS, repr(url), 1)


def run_recipe(url: str, where: Path) -> str:
    with Client(url) as haico:
        tid = haico.create_conversation(title="Recipe").thread_id
        haico.say(tid, "objective: a plan; todo: outline")
        haico.say(tid, "write: the first paragraph")
        branch = haico.branch(tid, 1).thread_id
        haico.rename(branch, name="alternative")
        haico.say(branch, "todo: another outline")
    out = io.StringIO()
    here = os.getcwd()
    os.chdir(where)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(recipe(url), str(DOC), "exec"), {"__name__": "recipe"})
    finally:
        os.chdir(here)
    return out.getvalue()


async def test_the_client_recipe_runs_against_a_live_server(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    server = Server(server_env)
    await server.start()
    try:
        printed = await asyncio.to_thread(run_recipe, server.url, tmp_path)
    finally:
        server.stop()
    assert "server: ok" in printed
    assert "replay done: 2/2" in printed
    assert (tmp_path / "steps_per_branch.png").stat().st_size > 0
    assert (tmp_path / "reply_length_per_profile.png").stat().st_size > 0
    # The mean reply length per profile: the server's default, and the replay's profile
    # (its branch runs under it).
    table = printed.splitlines()[printed.splitlines().index("profile") + 1 :]
    profiles = [line.split()[0] for line in table]
    assert len(profiles) == 2 and profiles[0] == "default" and profiles[1].startswith("pr_")
