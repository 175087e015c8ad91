"""Provenance of every node, against a fake OpenAI-compatible server that records what
it was sent: exact token counts from its usage report, estimation without one, cost
from the price table, notes that never reach the model. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from haico.agent.state import CHARS_PER_TOKEN
from haico.db.models import ActionLogEntry
from tests.helpers import db_of
from tests.history_helpers import new_thread, turn_ok
from tests.ledger_fakes import MODEL, PARTIAL, USAGE, Fake, FakeServer, fake_openai_app
from tests.sse_client import send_turn

API = "/api/conversations"
PRICE = {"input": 2.0, "output": 8.0}  # USD per million tokens


@pytest.fixture(params=[True, False], ids=["usage", "no-usage"])
def fake(request: pytest.FixtureRequest) -> Iterator[tuple[Fake, str]]:
    f = Fake(usage=bool(request.param))
    with FakeServer(fake_openai_app(f)) as server:
        yield f, f"http://127.0.0.1:{server.port}/v1"


@pytest.fixture
def settings_overrides(fake: tuple[Fake, str]) -> dict[str, Any]:
    return {
        "llm": "openai",
        "llm_base_url": fake[1],
        "llm_model": MODEL,
        "prices": json.dumps({MODEL: PRICE}),
    }


async def node(client: httpx.AsyncClient, tid: str, k: int) -> dict[str, Any]:
    r = await client.get(f"{API}/{tid}/nodes/{k}")
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


async def test_provenance_from_the_providers_report_or_estimated(
    app: FastAPI, client: httpx.AsyncClient, fake: tuple[Fake, str]
) -> None:
    f, _ = fake
    tid = await new_thread(client)
    await turn_ok(client, tid, "please add a todo")
    # every call asked the server for its usage report
    assert len(f.requests) == 2
    assert all(r["stream_options"] == {"include_usage": True} for r in f.requests)

    got = await node(client, tid, 1)
    p = got["provenance"]
    assert got["node_id"] == f"{tid}:1" and got["state"] == "complete" and got["kind"] == "turn"
    assert p["provider"] == "openai" and p["model"] == MODEL and p["profile_id"] == "default"
    assert len(p["instructions_sha256"]) == 64
    assert p["tool_calls"] == 1
    assert 0 <= p["first_token_ms"] <= p["duration_ms"]
    if f.usage:
        assert p["tokens_estimated"] is False
        assert p["input_tokens"] == sum(i for i, _ in USAGE)
        assert p["output_tokens"] == sum(o for _, o in USAGE)
    else:
        assert p["tokens_estimated"] is True
        assert p["input_tokens"] > 0 and p["output_tokens"] > 0
    cost = (p["input_tokens"] * PRICE["input"] + p["output_tokens"] * PRICE["output"]) / 1e6
    assert p["cost_usd"] == pytest.approx(cost)

    # the graph names the model; AHP gets the same counts as chat/usage
    graph = (await client.get(f"{API}/{tid}/graph")).json()
    assert [n["model"] for n in graph["nodes"]] == [MODEL]
    async with db_of(app).read() as s:
        logged = (await s.execute(select(ActionLogEntry.action))).scalars().all()
    usage = [a for a in logged if a.get("type") == "chat/usage" and a["turnId"].startswith(tid)]
    assert len(usage) == 1 and usage[0]["turnId"] == f"{tid}:1"
    assert usage[0]["usage"]["inputTokens"] == p["input_tokens"]
    assert usage[0]["usage"]["outputTokens"] == p["output_tokens"]
    assert usage[0]["usage"]["model"] == MODEL


async def test_notes_never_reach_the_model(
    client: httpx.AsyncClient, fake: tuple[Fake, str]
) -> None:
    f, _ = fake
    tid = await new_thread(client)
    await turn_ok(client, tid, "first step")
    secret, code = "NOTE-7f3a the agent ignored my constraint", "CODE-q9z"
    r = await client.post(f"{API}/{tid}/nodes/1/notes", json={"text": secret, "codes": [code]})
    assert r.status_code == 201, r.text
    before = len(f.requests)
    await turn_ok(client, tid, "second step")
    assert len(f.requests) > before  # the model was called again, with the history
    sent = f.bodies()
    assert "first step" in sent  # the earlier turn is in the prompt ...
    assert "NOTE-7f3a" not in sent and code not in sent  # ... the note never is
    transcript = (await client.get(f"{API}/{tid}/messages")).text
    assert "NOTE-7f3a" not in transcript and code not in transcript
    # the note is still there, on its node
    assert [n["text"] for n in (await node(client, tid, 1))["notes"]] == [secret]


async def test_a_turn_failed_by_a_model_error_keeps_what_it_measured(
    client: httpx.AsyncClient, fake: tuple[Fake, str]
) -> None:
    """The provider errors in the middle of its answer: the node is `error`, and its
    provenance keeps the counted tool call, the partial text (estimated), the model,
    the times and the cost of what was used."""
    f, _ = fake
    f.fail = True
    tid = await new_thread(client)
    status, events, _ = await send_turn(client, tid, "please add a todo")
    assert status == 200 and events[-1][0] == "error", events[-3:]
    assert len(f.requests) == 2  # the tool call, then the answer that failed

    got = await node(client, tid, 1)
    assert got["state"] == "error" and got["reply"].startswith("".join(PARTIAL).strip())
    p = got["provenance"]
    assert p["provider"] == "openai" and p["model"] == MODEL
    assert p["tool_calls"] == 1  # the call before the error happened, and is counted
    assert p["duration_ms"] is not None and 0 <= p["first_token_ms"] <= p["duration_ms"]
    # the partial answer has no usage report: it is estimated, on top of the first call
    partial = -(-len("".join(PARTIAL)) // CHARS_PER_TOKEN)
    assert p["tokens_estimated"] is True
    if f.usage:
        assert p["input_tokens"] == USAGE[0][0]
        assert p["output_tokens"] == USAGE[0][1] + partial
    else:
        assert p["input_tokens"] > 0 and p["output_tokens"] > partial
    cost = (p["input_tokens"] * PRICE["input"] + p["output_tokens"] * PRICE["output"]) / 1e6
    assert p["cost_usd"] == pytest.approx(cost)
    # the family's summary counts the failed step's tokens too
    usage = (await client.get(f"{API}/{tid}/usage")).json()
    assert [u["output_tokens"] for u in usage if u["thread_id"] == tid] == [p["output_tokens"]]
