"""The analysis CSV names every branch and keeps labels as text, on both databases:
an unnamed branch is named as the studio names it, and `docs/analysis.md` explains
every value of `kind` and reads `label` as a string."""

from __future__ import annotations

import csv
import io
import re
import typing
from pathlib import Path

import httpx
import pandas as pd

from haico.schemas.ledger import NodeKind
from tests.history_helpers import new_thread, turn_ok

API = "/api/conversations"
DOC = Path(__file__).resolve().parents[3] / "docs" / "analysis.md"


async def test_an_unnamed_branch_is_named_by_its_label(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    await turn_ok(client, tid, "objective: two")
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": 1})
    bid = r.json()["thread_id"]
    await turn_ok(client, bid, "objective: other")
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": 1})
    named = r.json()["thread_id"]
    await turn_ok(client, named, "objective: named")
    await client.patch(f"{API}/{named}", json={"name": "careful"})

    text = (await client.get(f"{API}/{tid}/export.csv")).text
    rows = {r["node_id"]: r for r in csv.DictReader(io.StringIO(text, newline=""))}
    assert rows[f"{tid}:1"]["branch_name"] == "main"
    assert rows[f"{bid}:2"]["label"] == "2.1"
    assert rows[f"{bid}:2"]["branch_name"] == "from 2.1"
    assert rows[f"{named}:2"]["branch_name"] == "careful"

    # the documented read keeps labels as the studio writes them ("2.10" is not 2.1)
    frame = pd.read_csv(io.StringIO(text), dtype={"label": str})
    assert sorted(frame["label"]) == ["1", "2", "2.1", "2.2"]
    assert frame["label"].map(type).eq(str).all()


def test_the_analysis_doc_lists_every_kind_and_reads_labels_as_text() -> None:
    doc = DOC.read_text()
    row = next(line for line in doc.splitlines() if line.startswith("| `kind`"))
    for kind in typing.get_args(NodeKind):
        assert re.search(rf"`{kind}`", row), f"docs/analysis.md does not explain kind {kind!r}"
    assert 'dtype={"label": str}' in doc
