"""The two SSE streams through FastAPI's own support, and the REST contract's edges.

`GET …/events`: `Last-Event-ID` resumes without duplicates (and wins over `?after=`),
keep-alive comments flow on an idle stream, and a follower from before the log's
window starts with a `haico/resync` action. Around it: `text/event-stream` in the
OpenAPI document, RFC 3339 timestamps with an offset, strict request bodies, the
`{code, message}` envelope for malformed bodies, and 405 with `Allow`.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import pytest
from fastapi import FastAPI

import haico.api.sse as sse_api
from haico.config import Settings
from haico.domain import now
from haico.events import log as action_log
from haico.main import create_app
from tests.helpers import db_of
from tests.history_helpers import live_server
from tests.sse_client import send_turn

RESYNC_SCHEMA = (
    Path(__file__).resolve().parent.parent.parent / "haico/events/schemas/haico-resync.schema.json"
)


async def read_stream(
    base: str,
    tid: str,
    *,
    want: int,
    headers: dict[str, str] | None = None,
    first: asyncio.Event | None = None,
    opened: asyncio.Event | None = None,
    **params: Any,
) -> tuple[list[tuple[str | None, str | None, Any]], str]:
    """(id, event, data) of the first `want` events of GET …/events, and the raw text.

    `first`, when given, is set once the first event has arrived; `opened` once the
    stream has answered.
    """
    events: list[tuple[str | None, str | None, Any]] = []
    raw = ""
    async with (
        httpx.AsyncClient(base_url=base, timeout=None) as c,
        c.stream(
            "GET", f"/api/conversations/{tid}/events", params=params, headers=headers or {}
        ) as r,
    ):
        assert r.status_code == 200, await r.aread()
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["x-accel-buffering"] == "no"  # no proxy buffering
        if opened is not None:
            opened.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                buf = ""
                async for chunk in r.aiter_text():
                    raw += chunk
                    buf += chunk
                    while "\n\n" in buf:
                        block, buf = buf.split("\n\n", 1)
                        fields: dict[str, list[str]] = {}
                        for line in block.splitlines():
                            key, _, value = line.partition(":")
                            fields.setdefault(key, []).append(value.removeprefix(" "))
                        if "data" in fields:
                            events.append(
                                (
                                    fields.get("id", [None])[0],
                                    fields.get("event", [None])[0],
                                    json.loads("\n".join(fields["data"])),
                                )
                            )
                            if first is not None:
                                first.set()
                    if len(events) >= want:
                        break
    return events, raw


async def edits(client: httpx.AsyncClient, tid: str, *texts: str) -> None:
    for text in texts:
        r = await client.put(f"/api/conversations/{tid}/objective", json={"text": text})
        assert r.status_code == 200, r.text


async def new_thread(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={"title": "sse"})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


async def test_last_event_id_resumes_without_duplicates(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await new_thread(client)
    await edits(client, tid, "one", "two", "three")
    async with live_server(app) as base:
        everything, _ = await read_stream(base, tid, want=4, after=0)
        ids = [int(i) for i, _, _ in everything if i is not None]
        assert all(name == "action" for _, name, _ in everything)
        assert [d["serverSeq"] for _, _, d in everything] == ids
        assert ids == sorted(set(ids)) and len(ids) >= 3
        # An EventSource reconnecting after the second-to-last event: the header wins
        # over `?after=0`, so nothing is replayed twice.
        resumed, _ = await read_stream(
            base, tid, want=1, headers={"Last-Event-ID": str(ids[-2])}, after=0
        )
        assert [int(i) for i, _, _ in resumed if i] == [ids[-1]]
        assert resumed[0][2]["action"]["type"] == "haico/workspaceChanged"
        # And it goes on live from there.
        opened = asyncio.Event()
        reader = asyncio.create_task(
            read_stream(base, tid, want=1, headers={"Last-Event-ID": str(ids[-1])}, opened=opened)
        )
        await asyncio.wait_for(opened.wait(), 10)
        await edits(client, tid, "four")
        live, _ = await reader
        assert len(live) == 1 and int(live[0][0] or 0) > ids[-1]
        assert live[0][2]["action"]["change"] == "set"


async def test_keepalive_comments_on_an_idle_stream(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sse_api, "KEEPALIVE_SECONDS", 0.1)
    tid = await new_thread(client)
    async with (
        live_server(app) as base,
        httpx.AsyncClient(base_url=base, timeout=None) as c,
        c.stream("GET", f"/api/conversations/{tid}/events", params={"after": 10**12}) as r,
    ):
        raw = ""
        async with asyncio.timeout(5):
            async for chunk in r.aiter_text():
                raw += chunk
                if raw.count(": keepalive\n\n") >= 2:
                    break
    assert raw.startswith(": keepalive\n\n")


async def test_a_follower_from_before_the_window_starts_with_a_resync(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = await new_thread(client)
    await edits(client, tid, "before the window")
    r = await client.post(f"/api/conversations/{tid}/todos", json={"text": "kept"})
    assert r.status_code == 201
    async with db_of(app).transaction() as s:
        _, first_newest = await action_log.bounds(s)
    await edits(client, tid, "latest")
    # Everything but the newest entry leaves the log, as retention would do.
    async with db_of(app).transaction() as s:
        await action_log.prune_before(s, now() + timedelta(days=1))
        oldest, newest = await action_log.bounds(s)
    assert oldest == newest > first_newest
    async with live_server(app) as base:
        resync_arrived = asyncio.Event()
        reader = asyncio.create_task(read_stream(base, tid, want=2, first=resync_arrived, after=1))
        # The resync carries the newest id at connect time: edit only once it is here.
        async with asyncio.timeout(10):
            await resync_arrived.wait()
        await edits(client, tid, "live after the resync")
        events, _ = await reader
    first_id, name, envelope = events[0]
    assert name == "action" and first_id == str(newest)
    assert envelope["channel"] == action_log.chat_channel(tid)
    assert envelope["serverSeq"] == newest
    resync = envelope["action"]
    jsonschema.validate(resync, json.loads(RESYNC_SCHEMA.read_text()))
    assert resync["type"] == "haico/resync"
    assert resync["history"]["root_thread_id"] == tid
    assert resync["history"]["working_thread_id"] == tid
    assert resync["workspace"]["objective"] == "latest"
    assert [t["text"] for t in resync["workspace"]["todos"]] == ["kept"]
    # ...then live, with no replay of the pruned gap.
    _, _, live = events[1]
    assert live["serverSeq"] > newest
    assert live["action"]["item"] == {"text": "live after the resync"}
    # Last-Event-ID from before the window resyncs too.
    async with live_server(app) as base:
        again, _ = await read_stream(base, tid, want=1, headers={"Last-Event-ID": "1"})
    assert again[0][2]["action"]["type"] == "haico/resync"


async def test_turn_stream_keeps_its_event_names(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    status, events, _ = await send_turn(client, tid, "objective: streamed")
    assert status == 200
    names = [n for n, _ in events]
    assert names[0] == "turn_started" and names[-1] == "turn_completed"
    assert "tool_call" in names and "workspace_changed" in names
    assert events[0][1]["node_id"] == f"{tid}:1"
    # Errors before the stream are still JSON with the envelope.
    r = await client.post("/api/conversations/th_nope/turns", json={"content": "x"})
    assert r.status_code == 404 and r.json()["code"] == "not_found"


def test_openapi_declares_event_streams(tmp_path: Path) -> None:
    spec = create_app(Settings(data_dir=tmp_path, secret_key="k")).openapi()
    for path, method in (
        ("/api/conversations/{thread_id}/turns", "post"),
        ("/api/conversations/{thread_id}/events", "get"),
    ):
        responses = spec["paths"][path][method]["responses"]
        assert "text/event-stream" in responses["200"]["content"], path
        # Refusals come before the stream, as JSON errors.
        assert "application/json" in responses["404"]["content"], path
    events = spec["paths"]["/api/conversations/{thread_id}/events"]["get"]
    assert {p["name"] for p in events["parameters"]} >= {"after", "Last-Event-ID"}
    error = spec["components"]["schemas"]["ErrorOut"]
    assert set(error["required"]) == {"code", "message"}


def _aware(value: str) -> datetime:
    parsed = datetime.fromisoformat(value)
    assert parsed.utcoffset() is not None, value
    return parsed


async def test_timestamps_carry_a_utc_offset(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    await send_turn(client, tid, "objective: stamped")
    conv = (await client.get(f"/api/conversations/{tid}")).json()
    assert _aware(conv["created_at"]) <= _aware(conv["updated_at"])
    listed = (await client.get("/api/conversations")).json()
    assert all(_aware(c["created_at"]) and _aware(c["updated_at"]) for c in listed)
    graph = (await client.get(f"/api/conversations/{tid}/graph")).json()
    assert graph["nodes"] and all(_aware(n["captured_at"]) for n in graph["nodes"])


@pytest.mark.parametrize(
    "body",
    [
        {"text": "t", "depth": False},
        {"text": "t", "done": -1.4e16},
        {"text": "t", "depth": "1"},
        {"text": "t", "done": "true"},
        {"text": 5},
        {"text": "nul \u0000 inside"},
    ],
)
async def test_request_bodies_are_strict(client: httpx.AsyncClient, body: Any) -> None:
    tid = await new_thread(client)
    r = await client.post(f"/api/conversations/{tid}/todos", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["code"] == "invalid_input" and r.json()["message"]
    todos = (await client.get(f"/api/conversations/{tid}/workspace")).json()["todos"]
    assert todos == []


async def test_json_natural_types_still_work(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    r = await client.post(
        f"/api/conversations/{tid}/todos", json={"text": "t", "done": True, "depth": 2}
    )
    assert r.status_code == 201, r.text
    assert (r.json()["done"], r.json()["depth"]) == (True, 2)
    r = await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 0})
    assert r.status_code in (201, 404), r.text  # strictness never refuses a plain int


@pytest.mark.parametrize("raw", [b"{bad json", b'{"title": "x"', b"\xff\xfe\x00garbage"])
async def test_malformed_bodies_answer_the_envelope(client: httpx.AsyncClient, raw: bytes) -> None:
    r = await client.post(
        "/api/conversations", content=raw, headers={"content-type": "application/json"}
    )
    assert r.status_code == 422, r.text
    body = r.json()
    assert body["code"] == "invalid_input"
    assert body["message"].startswith("body:")


async def test_methods_not_allowed_answer_405_with_allow(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    cases = {
        ("OPTIONS", f"/api/conversations/{tid}"): "GET, PATCH, DELETE",
        ("PUT", f"/api/conversations/{tid}"): "GET, PATCH, DELETE",
        ("OPTIONS", "/api/conversations"): "GET, POST",
        ("DELETE", f"/api/conversations/{tid}/workspace"): "GET",
        ("GET", f"/api/conversations/{tid}/turns"): "POST",
    }
    for (method, path), allow in cases.items():
        r = await client.request(method, path)
        assert r.status_code == 405, (method, path, r.text)
        assert r.headers["allow"] == allow, (method, path)
        assert r.json()["code"] == "method_not_allowed"
