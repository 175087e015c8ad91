"""A JSON-RPC fuzzer for `/ahp`: random text, random JSON and mutated requests (real
method names with wrong ids, versions and params), driven by hypothesis. Whatever
arrives, the connection stays up and keeps answering, every message the host sends
is valid for the agreed version, and the server keeps serving everyone else."""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.ahp.live import chat_of
from tests.ahp.wire import AhpClient
from tests.history_helpers import live_server, new_thread

FRAMES = int(os.environ.get("HAICO_FUZZ_AHP_FRAMES", "300"))
METHODS = [
    "initialize",
    "reconnect",
    "ping",
    "subscribe",
    "unsubscribe",
    "listSessions",
    "createSession",
    "disposeSession",
    "createChat",
    "fetchTurns",
    "checkoutChatHistory",
    "dispatchAction",
    "shutdown",
]

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63),
    st.floats(allow_nan=False),
    st.text(max_size=40),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5), st.dictionaries(st.text(max_size=12), inner, max_size=5)
    ),
    max_leaves=20,
)


def _channels(chat: str) -> st.SearchStrategy[Any]:
    return st.sampled_from(
        [
            chat,
            "ahp-root://",
            "ahp-chat:/not-a-uuid",
            "ahp-session:/00000000-0000-0000-0000-000000000000",
            "",
        ]
    )


def _requests(chat: str) -> st.SearchStrategy[dict[str, Any]]:
    params = st.one_of(
        json_values,
        st.fixed_dictionaries(
            {},
            optional={
                "channel": _channels(chat),
                "turnId": st.one_of(st.text(max_size=20), st.sampled_from([f"{chat}:1", "x:1"])),
                "parentTurnId": st.one_of(st.none(), st.text(max_size=20)),
                "cursor": st.text(max_size=40),
                "protocolVersions": st.lists(st.text(max_size=8), max_size=3),
                "lastSeenServerSeq": st.one_of(st.integers(), st.text(max_size=5)),
                "subscriptions": st.lists(_channels(chat), max_size=3),
                "action": json_values,
            },
        ),
    )
    return st.fixed_dictionaries(
        {"method": st.one_of(st.sampled_from(METHODS), st.text(max_size=20))},
        optional={
            "jsonrpc": st.sampled_from(["2.0", "1.0", 2, None]),
            "id": st.one_of(
                st.integers(),
                st.text(max_size=10),
                st.none(),
                st.floats(),
                st.lists(st.integers(), max_size=2),
            ),
            "params": params,
        },
    )


def _frames(chat: str) -> st.SearchStrategy[str]:
    return st.one_of(
        st.text(max_size=200),
        json_values.map(json.dumps),
        _requests(chat).map(json.dumps),
        _requests(chat).map(lambda r: json.dumps(r)[: max(1, len(json.dumps(r)) // 2)]),
    )


def _draw(chat: str, n: int) -> list[str]:
    """`n` frames drawn by hypothesis (generation only; the sending is async)."""
    out: list[str] = []

    @settings(
        max_examples=n, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )
    @given(frame=_frames(chat))
    def collect(frame: str) -> None:
        out.append(frame)

    collect()
    return out


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    # This test is about parsing, not the flood limit (tested in tests/ahp/test_limits.py).
    return {"ahp_requests_per_second": 10_000.0}


async def test_fuzzed_frames_never_break_the_connection_or_the_server(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await new_thread(client)
    chat = chat_of(tid)
    frames = _draw(chat, FRAMES)
    assert len(frames) >= FRAMES * 0.9
    async with live_server(app) as base:
        fuzzed = await AhpClient.open(base)
        await fuzzed.initialize(["1.0.0"])
        bystander = await AhpClient.open(base)
        await bystander.initialize(["1.0.0"])
        await bystander.request("subscribe", {"channel": chat})
        for i, frame in enumerate(frames):
            await fuzzed.ws.send(frame)
            if i % 25 == 24:
                # Still up and answering, in order, after everything sent so far.
                await fuzzed.request("ping", {}, within=20)
        await fuzzed.request("ping", {}, within=20)
        assert fuzzed.close_code is None, f"closed with {fuzzed.close_code}"
        # Nearly every frame is answered (an error for all but the few valid calls and
        # notifications): the host read and judged each one.
        assert len(fuzzed.errors) >= len(frames) * 0.8, (len(fuzzed.errors), len(frames))
        assert not fuzzed.invalid, fuzzed.invalid[:3]
        # Everyone else is served: the bystander, REST, and a new connection.
        await bystander.request("ping", {})
        assert not bystander.invalid, bystander.invalid[:3]
        r = await client.post(f"/api/conversations/{tid}/todos", json={"text": "still here"})
        assert r.status_code == 201, r.text
        fresh = await AhpClient.open(base)
        await fresh.initialize(["0.7.0"])
        await fresh.request("listSessions", {})
        for c in (fuzzed, bystander, fresh):
            await c.close()
    assert (await client.get("/api/health")).status_code == 200
