"""A model profile against a fake OpenAI-compatible server that records what it was
sent: the profile's model, parameters and instructions reach it; the default profile
still sends the server's model. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.history_helpers import new_thread, turn_ok
from tests.ledger_fakes import MODEL, Fake, FakeServer, fake_openai_app
from tests.whatif_helpers import make_profile, node, turn_with


@pytest.fixture
def fake() -> Iterator[tuple[Fake, str]]:
    f = Fake()
    with FakeServer(fake_openai_app(f)) as server:
        yield f, f"http://127.0.0.1:{server.port}/v1"


@pytest.fixture
def settings_overrides(fake: tuple[Fake, str]) -> dict[str, Any]:
    return {"llm": "openai", "llm_base_url": fake[1], "llm_model": MODEL}


async def test_a_profile_reaches_the_openai_compatible_server(
    client: httpx.AsyncClient, fake: tuple[Fake, str]
) -> None:
    f, _ = fake
    r = await client.post("/api/profiles", json={"name": "c", "provider": "anthropic"})
    assert r.status_code == 422 and r.json()["code"] == "provider_unavailable"
    assert [p["model"] for p in (await client.get("/api/profiles")).json()] == [MODEL]
    p = await make_profile(
        client,
        name="careful",
        provider="openai",
        model="other-model",
        params={"temperature": 0.3, "seed": 5, "max_tokens": 99},
        instructions="INSTR-42: cite your sources.",
    )
    tid = await new_thread(client)
    await turn_with(client, tid, "please add a todo", p["id"])
    assert len(f.requests) == 2  # the tool call, then the answer
    for body in f.requests:
        assert body["model"] == "other-model"
        assert body["temperature"] == 0.3 and body["seed"] == 5
        assert 99 in (body.get("max_tokens"), body.get("max_completion_tokens"))
        system = body["messages"][0]
        assert system["role"] == "system"
        assert "INSTR-42: cite your sources." in json.dumps(system)
    prov = (await node(client, tid, 1))["provenance"]
    assert prov["provider"] == "openai" and prov["profile_id"] == p["id"]
    assert prov["params"] == {"temperature": 0.3, "seed": 5, "max_tokens": 99}
    assert prov["ignored_params"] == []
    # the default profile still sends the server's model, without the instructions
    await turn_ok(client, tid, "again")
    assert f.requests[-1]["model"] == MODEL and "temperature" not in f.requests[-1]
    assert "INSTR-42" not in json.dumps(f.requests[-1])
    assert (await node(client, tid, 2))["provenance"]["profile_id"] == "default"
