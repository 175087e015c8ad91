"""docs/analysis.md's pandas snippet, run against a real exported CSV (on both
databases): it must load the file, draw both plots and find the coded steps."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

import httpx

from tests.history_helpers import new_thread, turn_ok

DOC = Path(__file__).resolve().parents[3] / "docs" / "analysis.md"
API = "/api/conversations"


def snippet() -> str:
    """The pandas snippet (the client's recipe is tests/client/test_analysis_recipe.py's)."""
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    blocks = [block for block in blocks if "haico.client" not in block]
    assert len(blocks) == 1
    return blocks[0]


async def test_the_analysis_snippet_runs_on_an_export(
    client: httpx.AsyncClient, tmp_path: Path
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: study; todo: a")
    await turn_ok(client, tid, "write: hello, world")
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": 1})
    bid = r.json()["thread_id"]
    await client.patch(f"{API}/{bid}", json={"name": "alternative"})
    await turn_ok(client, bid, "objective: other")
    note = {"text": 'closed too early, "really"', "codes": ["closure", "agent-led"]}
    assert (await client.post(f"{API}/{bid}/nodes/2/notes", json=note)).status_code == 201
    r = await client.get(f"{API}/{tid}/export.csv")
    assert r.status_code == 200
    (tmp_path / "nodes.csv").write_bytes(r.content)

    out = io.StringIO()
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(snippet(), str(DOC), "exec"), {"__name__": "analysis"})
    finally:
        os.chdir(here)
    assert (tmp_path / "turns_per_branch.png").stat().st_size > 0
    assert (tmp_path / "tokens_per_step.png").stat().st_size > 0
    printed = out.getvalue()
    assert "2.1" in printed and "closed too early" in printed
    assert "hello" not in printed  # only the coded step
