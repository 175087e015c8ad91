"""The analysis export (CSV) and a path as a document, through the REST API on both
databases; the path document's one rule (its lineage and nothing else) as a property
over random trees."""

from __future__ import annotations

import csv
import io
import os

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haico.services.reports.analysis_export import COLUMNS
from tests.history_helpers import new_thread, turn_ok

API = "/api/conversations"
# Random trees per run (`HAICO_FUZZ_EXAMPLES` raises it for a long run).
TREES = int(os.environ.get("HAICO_FUZZ_EXAMPLES", "4"))


def parse(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


async def csv_of(client: httpx.AsyncClient, url: str) -> tuple[str, list[dict[str, str]]]:
    r = await client.get(url)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    return r.text, parse(r.text)


async def branch(client: httpx.AsyncClient, tid: str, k: int) -> str:
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": k})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def test_csv_one_row_per_node_quoted_and_complete(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client, 'Study, "A"')
    await turn_ok(client, tid, "objective: compare, contrast; todo: read")
    await turn_ok(client, tid, 'say "hi", then\nwait for me')
    await turn_ok(client, tid, "done todo 1; prefer: short")
    bid = await branch(client, tid, 1)
    await turn_ok(client, bid, "objective: another way")
    await client.patch(f"{API}/{bid}", json={"name": "alt"})
    tricky = 'a note, with "quotes"\nand a second line'
    r = await client.post(f"{API}/{tid}/nodes/2/notes", json={"text": tricky, "codes": ["x", "y"]})
    assert r.status_code == 201
    await client.post(f"{API}/{tid}/todos", json={"text": "by hand"})  # at the tip: node 3

    text, rows = await csv_of(client, f"{API}/{tid}/export.csv")
    assert text.startswith(",".join(COLUMNS) + "\r\n")
    assert list(rows[0]) == list(COLUMNS)
    graph = (await client.get(f"{API}/{tid}/graph")).json()
    assert sorted(r["node_id"] for r in rows) == sorted(n["id"] for n in graph["nodes"])
    by = {r["node_id"]: r for r in rows}
    second = by[f"{tid}:2"]
    assert second["user_message"] == 'say "hi", then\nwait for me'
    assert second["notes"] == tricky and second["codes"] == "x;y"
    assert second["parent_node_id"] == f"{tid}:1" and second["label"] == "2"
    first = by[f"{tid}:1"]
    assert first["objective"] == "compare, contrast" and first["todos_open"] == "1"
    assert first["provider"] == "offline" and int(first["input_tokens"]) > 0
    assert first["edits_by_agent"] == "2" and first["edits_by_user"] == "0"
    third = by[f"{tid}:3"]
    assert third["todos_done"] == "1" and third["todos_open"] == "1" and third["preferences"] == "1"
    assert third["edits_by_user"] == "1"
    alt = by[f"{bid}:2"]
    assert alt["branch_name"] == "alt" and alt["label"] == "2.1"
    assert alt["parent_node_id"] == f"{tid}:1" and alt["objective"] == "another way"
    # the head is on the branch (its last turn): its path is 1 -> 2.1
    on_path = {r["node_id"] for r in rows if r["on_head_path"] == "true"}
    assert on_path == {f"{tid}:1", f"{bid}:2"}

    # every family of the caller
    other = await new_thread(client)
    await turn_ok(client, other, "hello")
    _, everything = await csv_of(client, "/api/export.csv")
    assert {r["root_thread_id"] for r in everything} >= {tid, other}
    assert len([r for r in everything if r["root_thread_id"] == tid]) == len(rows)


async def test_path_document_formats_and_notes(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client, "Essay")
    await turn_ok(client, tid, "objective: write; todo: outline; todo: draft")
    await turn_ok(client, tid, "remove todo 2; write: First <b>line</b>")
    bid = await branch(client, tid, 1)
    await turn_ok(client, bid, "objective: OFFPATH-branch")
    await client.post(f"{API}/{tid}/nodes/2/notes", json={"text": "NOTE-on-2", "codes": ["c1"]})

    r = await client.get(f"{API}/{tid}/path", params={"node": f"{tid}:2"})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/markdown")
    md = r.text
    assert md.startswith("# Essay")
    assert "### Step 1" in md and "### Step 2" in md
    assert "added todo “outline”" in md and "todo “draft”" in md  # the rejection
    assert "OFFPATH" not in md and "NOTE-on-2" not in md
    with_notes = (
        await client.get(f"{API}/{tid}/path", params={"node": f"{tid}:2", "notes": "true"})
    ).text
    assert "NOTE-on-2" in with_notes and "c1" in with_notes

    r = await client.get(f"{API}/{tid}/path", params={"format": "html", "notes": "true"})
    assert r.headers["content-type"].startswith("text/html")
    page = r.text
    assert page.startswith("<!doctype html>") and "@media print" in page
    assert "First &lt;b&gt;line&lt;/b&gt;" in page and "<b>line" not in page
    assert "OFFPATH" not in page and "NOTE-on-2" in page

    # the default node is the thread's latest; a branch's path runs through its parent
    branch_md = (await client.get(f"{API}/{bid}/path")).text
    assert "OFFPATH-branch" in branch_md and "### Step 2.1" in branch_md
    assert "remove todo 2" not in branch_md
    assert (await client.get(f"{API}/{tid}/path", params={"node": f"{tid}:9"})).status_code == 404
    assert (await client.get(f"{API}/{tid}/path", params={"node": "nope"})).status_code == 422
    assert (await client.get(f"{API}/{tid}/path", params={"format": "pdf"})).status_code == 422


# ---- the property: a path document holds its lineage and nothing else ----


@st.composite
def trees(draw: st.DrawFn) -> list[int]:
    """Parents of nodes 1..n (node 0 is the first turn): each hangs from an earlier one."""
    n = draw(st.integers(min_value=1, max_value=5))
    return [draw(st.integers(min_value=0, max_value=i)) for i in range(n)]


async def _build(client: httpx.AsyncClient, parents: list[int]) -> tuple[list[str], list[int]]:
    """Nodes (ids) built as the tree says; each user message is `M<i>X`."""
    tid = await new_thread(client)
    await turn_ok(client, tid, "M0X")
    ids = [f"{tid}:1"]
    tips: dict[str, int] = {tid: 1}  # thread -> its latest turn
    for i, parent in enumerate(parents, start=1):
        thread, k = ids[parent].rsplit(":", 1)
        turn = int(k)
        if tips.get(thread) == turn:
            target = thread
        else:
            target = await branch(client, thread, turn)
        events = await turn_ok(client, target, f"M{i}X", force="true")
        ids.append(events[-1][1]["node_id"])
        tips[target] = turn + 1
    return ids, [-1, *parents]


def _ancestors(parents: list[int], i: int) -> set[int]:
    out = set()
    while i >= 0:
        out.add(i)
        i = parents[i]
    return out


def _draw_trees(n: int) -> list[list[int]]:
    """`n` random trees drawn by hypothesis (generation only; building them is async)."""
    out: list[list[int]] = []

    @settings(
        max_examples=n, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(parents=trees())
    def collect(parents: list[int]) -> None:
        out.append(parents)

    collect()
    return out


async def test_path_document_never_holds_an_off_path_step(client: httpx.AsyncClient) -> None:
    drawn = _draw_trees(TREES)
    assert drawn
    for parents in drawn:
        ids, tree = await _build(client, parents)
        tid = ids[0].rsplit(":", 1)[0]
        for i, node in enumerate(ids):
            on_path = _ancestors(tree, i)
            for fmt in ("md", "html"):
                r = await client.get(f"{API}/{tid}/path", params={"node": node, "format": fmt})
                assert r.status_code == 200, r.text
                for j in range(len(ids)):
                    assert (f"M{j}X" in r.text) == (j in on_path), (fmt, node, j, tree)
