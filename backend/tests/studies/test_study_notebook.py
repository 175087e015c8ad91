"""docs/studies.md's notebook snippet, run against a real study CSV (on both
databases): it loads the file and compares the conditions."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.studies.reports_helpers import add_person, checkout, new_study, turn, working_thread

DOC = Path(__file__).resolve().parents[3] / "docs" / "studies.md"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


def snippet() -> str:
    blocks = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)
    assert len(blocks) == 1
    return blocks[0]


async def test_the_study_snippet_compares_the_conditions(
    app: FastAPI, client: httpx.AsyncClient, tmp_path: Path
) -> None:
    study = await new_study(app, "branching", "linear")
    a = await add_person(app, client, study, "branching")
    b = await add_person(app, client, study, "linear")
    await turn(client, a, "objective: essay")
    await turn(client, a, "todo: outline")
    await checkout(client, a, f"{a.thread_id}:1")
    await turn(client, a, "todo: other", await working_thread(client, a))
    await turn(client, b, "objective: essay")
    r = await client.get(f"/api/studies/{study.id}/export.csv", headers=study.owner_h)
    assert r.status_code == 200, r.text
    (tmp_path / "study.csv").write_bytes(r.content)

    out = io.StringIO()
    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        with contextlib.redirect_stdout(out):
            exec(compile(snippet(), str(DOC), "exec"), {"__name__": "study"})
    finally:
        os.chdir(here)
    lines = {line.split()[0]: line.split()[1:] for line in out.getvalue().splitlines()[1:]}
    # condition: participants, turns mean, turns median, output tokens mean, left the path
    assert lines["branching"][:3] == ["1", "3.0", "3.0"]
    assert lines["branching"][-1] == "1"
    assert lines["linear"][:3] == ["1", "1.0", "1.0"]
    assert lines["linear"][-1] == "0"
