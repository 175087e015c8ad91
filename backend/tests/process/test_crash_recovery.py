"""A turn survives its client hanging up (it completes) and its server being SIGKILLed
(message, partial reply, head, prefixes)."""

from __future__ import annotations

import asyncio
import contextlib
import json
from typing import Any

import httpx
from fastapi import FastAPI

from haico.agent.state import CHARS_PER_TOKEN
from haico.domain import NodeState
from tests.history_helpers import live_server
from tests.server import Server
from tests.sse_client import parse_sse


async def _until(c: httpx.AsyncClient, tid: str, turn: int, state: NodeState) -> dict[str, Any]:
    """The graph node of `turn`, once it is in `state` (polled)."""
    for _ in range(300):
        graph = (await c.get(f"/api/conversations/{tid}/graph")).json()
        for node in graph["nodes"]:
            if node["turn_index"] == turn and node["state"] == state:
                return dict(node)
        await asyncio.sleep(0.1)
    raise AssertionError(f"turn {turn} never became {state}")


async def _streamed_some(c: httpx.AsyncClient, tid: str, node: str) -> None:
    """Wait until the family's log holds some of the turn's reply text."""
    for _ in range(100):
        async with c.stream("GET", f"/api/conversations/{tid}/events?after=0") as r:
            seen = ""
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(0.5):
                    async for line in r.aiter_lines():
                        seen += line + "\n"
        deltas = [a for a in _actions(seen) if a["type"] == "chat/delta" and a["turnId"] == node]
        if deltas:
            return
        await asyncio.sleep(0.2)
    raise AssertionError("the turn streamed nothing")


def _actions(text: str) -> list[dict]:
    out = []
    for line in text.replace("data:", "\ndata:").splitlines():
        if line.startswith("data:"):
            with contextlib.suppress(ValueError):
                out.append(json.loads(line[5:])["action"])
    return out


def _turns(messages: list[dict]) -> set[int]:
    return {m["turn_index"] for m in messages}


async def test_a_turn_whose_client_hangs_up_still_completes(app: FastAPI) -> None:
    async with live_server(app) as url, httpx.AsyncClient(base_url=url, timeout=30) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        async with c.stream(
            "POST", f"/api/conversations/{tid}/turns", json={"content": "wait: 1"}
        ) as r:
            async for chunk in r.aiter_text():
                if "turn_started" in chunk:
                    break  # hang up right after the turn started
        node = await _until(c, tid, 1, NodeState.COMPLETE)
        assert node["id"] == f"{tid}:1"
        msgs = (await c.get(f"/api/conversations/{tid}/messages")).json()
        assert [m["role"] for m in msgs][:1] == ["user"] and msgs[-1]["role"] == "assistant"
        r = await c.post(f"/api/conversations/{tid}/turns", json={"content": "objective: ok"})
        assert parse_sse(r.text)[-1][0] == "turn_completed"


async def test_killed_turn_keeps_message_partial_reply_and_head(
    server_env: dict[str, str],
) -> None:
    server = Server(server_env)
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        r = await c.post(f"/api/conversations/{tid}/turns", json={"content": "objective: one"})
        assert parse_sse(r.text)[-1][0] == "turn_completed"
        task = asyncio.create_task(
            c.post(f"/api/conversations/{tid}/turns", json={"content": "wait: 20"})
        )
        await _streamed_some(c, tid, f"{tid}:2")
        server.kill()
        with contextlib.suppress(httpx.HTTPError):
            await task
    restarted = Server(server_env)
    await restarted.start()
    try:
        async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as c:
            node = await _until(c, tid, 2, NodeState.ERROR)
            assert node["user_message"] == "wait: 20"
            msgs = (await c.get(f"/api/conversations/{tid}/messages")).json()
            killed = [m for m in msgs if m["turn_index"] == 2]
            assert [m["role"] for m in killed] == ["user", "assistant"]
            assert killed[0]["content"] == "wait: 20"
            assert killed[1]["content"] and killed[1].get("state") == NodeState.ERROR
            # Its provenance is what is known of it: the model, the text it streamed
            # (estimated); no usage report (input unknown), no times, no cost.
            p = (await c.get(f"/api/conversations/{tid}/nodes/2")).json()["provenance"]
            streamed = -(-len(killed[1]["content"]) // CHARS_PER_TOKEN)
            assert p["provider"] == "offline" and p["model"] == "haico-offline"
            assert p["tokens_estimated"] is True and p["input_tokens"] is None
            assert p["output_tokens"] == streamed and p["tool_calls"] == 0
            assert p["duration_ms"] is None and p["cost_usd"] is None
            history = (await c.get(f"/api/conversations/{tid}/history")).json()
            assert history["head_turn_id"] == f"{tid}:2"
            assert history["active_turn"] is None

            # The family goes on, and every prefix copy is cut by turn index.
            r = await c.post(f"/api/conversations/{tid}/turns", json={"content": "todo: three"})
            events = parse_sse(r.text)
            assert events[0][1]["turn_index"] == 3 and events[-1][0] == "turn_completed"
            msgs = (await c.get(f"/api/conversations/{tid}/messages")).json()
            for k in (1, 2, 3):
                b = await c.post(f"/api/conversations/{tid}/branch", json={"from_turn": k})
                assert b.status_code == 201, b.text
                branch = b.json()["thread_id"]
                prefix = (await c.get(f"/api/conversations/{branch}/messages")).json()
                assert _turns(prefix) == set(range(1, k + 1))
                assert prefix == [m for m in msgs if m["turn_index"] <= k]
            # A draft restored at the killed node, promoted by a send, carries 1..2.
            r = await c.post(f"/api/conversations/{tid}/checkout", json={"turn_id": f"{tid}:2"})
            draft = r.json()["working_thread_id"]
            r = await c.post(f"/api/conversations/{draft}/turns", json={"content": "todo: 3b"})
            assert parse_sse(r.text)[-1][0] == "turn_completed"
            promoted = (await c.get(f"/api/conversations/{draft}/messages")).json()
            assert [m["turn_index"] for m in promoted if m["role"] == "user"] == [1, 2, 3]
            # A fork of the restored view carries the prefix too.
            f = await c.post(f"/api/conversations/{tid}/fork", json={"from_turn": 2})
            forked = (await c.get(f"/api/conversations/{f.json()['thread_id']}/messages")).json()
            assert _turns(forked) == {1, 2}
    finally:
        restarted.stop()
