"""The family's tree JSONL, preference JSONL and Parquet exports on both databases:
the tree's parent links and codes per message, a preference line per judgment that
prefers a side (the path up to the fork as its prompt), and the analysis table's
columns typed."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from fastapi import FastAPI

from haico.services.reports.analysis_export import COLUMNS
from tests.coding.helpers import API, code, family, ok


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


def jsonl(r: httpx.Response) -> list[dict[str, Any]]:
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/x-ndjson")
    return [json.loads(line) for line in r.text.splitlines()]


async def test_tree_jsonl_links_each_message_to_its_parent(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=())
    await code(client, s.tid, 2, s.code("planning"), s.owner_h)
    await code(
        client,
        s.tid,
        2,
        s.code("pushback"),
        s.owner_h,
        span={"field": "reply", "start": 0, "end": 1},
    )
    lines = jsonl(await client.get(f"{API}/{s.tid}/export.jsonl?format=tree", headers=s.owner_h))
    by_id = {m["message_id"]: m for m in lines}
    assert len(lines) == 8  # 4 nodes (3 on the main line, 1 on the branch) × 2 messages
    first = by_id[f"{s.tid}:1/prompter"]
    assert first["parent_id"] is None and first["role"] == "prompter"
    assert first["text"] == "objective: plan a trip" and first["thread_id"] == s.tid
    assert by_id[f"{s.tid}:1/assistant"]["parent_id"] == f"{s.tid}:1/prompter"
    # the two siblings hang from step 1's reply: the tree keeps the branch
    for node in (f"{s.tid}:2", f"{s.sibling_tid}:2"):
        assert by_id[f"{node}/prompter"]["parent_id"] == f"{s.tid}:1/assistant"
    assert by_id[f"{s.sibling_tid}:2/prompter"]["text"] == "Take the train instead"
    assert by_id[f"{s.tid}:2/prompter"]["codes"] == ["planning"]
    assert by_id[f"{s.tid}:2/assistant"]["codes"] == ["planning", "pushback"]
    assert by_id[f"{s.tid}:3/prompter"]["codes"] == []
    assert "participant" not in first
    # parents come before children
    seen: set[str] = set()
    for m in lines:
        assert m["parent_id"] is None or m["parent_id"] in seen
        seen.add(m["message_id"])


async def test_preference_jsonl_has_a_line_per_preferring_judgment(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=())
    a, b = f"{s.tid}:2", f"{s.sibling_tid}:2"
    url = f"{API}/{s.tid}/judgments"
    body = {"a": a, "b": b, "preferred": "b", "criterion": "concise"}
    await ok(await client.post(url, json=body, headers=s.owner_h), 201)
    tie = {"a": a, "b": b, "preferred": "tie"}
    await ok(await client.post(url, json=tie, headers=s.owner_h), 201)
    n1 = await ok(await client.get(f"{API}/{s.tid}/nodes/1", headers=s.owner_h))
    na = await ok(await client.get(f"{API}/{s.tid}/nodes/2", headers=s.owner_h))
    nb = await ok(await client.get(f"{API}/{s.sibling_tid}/nodes/2", headers=s.owner_h))
    (line,) = jsonl(
        await client.get(f"{API}/{s.tid}/export.jsonl?format=preferences", headers=s.owner_h)
    )
    assert line["prompt"] == [
        {"role": "user", "content": n1["user_message"]},
        {"role": "assistant", "content": n1["reply"]},
    ]
    assert line["chosen"] == [
        {"role": "user", "content": nb["user_message"]},
        {"role": "assistant", "content": nb["reply"]},
    ]
    assert line["rejected"][0]["content"] == na["user_message"]
    assert line["criterion"] == "concise" and line["judge"] == s.owner.name
    r = await client.get(f"{API}/{s.tid}/export.jsonl?format=other", headers=s.owner_h)
    assert r.status_code == 422


async def test_parquet_holds_the_analysis_table_typed(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s = await family(app, client, coders=())
    r = await client.get(f"{API}/{s.tid}/export.parquet", headers=s.owner_h)
    assert r.status_code == 200 and r.headers["content-type"] == "application/vnd.apache.parquet"
    table = pq.read_table(io.BytesIO(r.content))
    assert table.schema.names == list(COLUMNS)
    assert table.schema.field("started_at").type == pa.timestamp("us", tz="UTC")
    assert table.schema.field("tool_calls").type == pa.int64()
    assert table.schema.field("on_head_path").type == pa.bool_()
    assert table.schema.field("cost_usd").type == pa.float64()
    rows = table.to_pylist()
    assert len(rows) == 4
    by_node = {row["node_id"]: row for row in rows}
    assert by_node[f"{s.tid}:1"]["user_message"] == "objective: plan a trip"
    # the head is on the branch: its path holds step 1 and the sibling, not step 2
    assert by_node[f"{s.sibling_tid}:2"]["on_head_path"] is True
    assert by_node[f"{s.tid}:2"]["on_head_path"] is False
    # the same rows as the CSV
    csv = (await client.get(f"{API}/{s.tid}/export.csv", headers=s.owner_h)).text
    assert len(csv.strip().splitlines()) == len(rows) + 1
