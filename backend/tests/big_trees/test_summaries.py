"""Branch summaries, on both backends: derived offline from the branch's messages and
workspace change; with a real provider written by the summary model off the turn's
path, at most once per branch per N turns, and a failure keeps the old summary.

The real provider is a fake OpenAI-compatible server on 127.0.0.1."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from haico.agent.summaries import offline_summary
from haico.schemas.workspace import DocumentOut
from haico.services.compare.net_change import NetChange
from haico.services.workspace.state import PreferenceState, TodoState, WorkspaceState
from tests.agent.test_providers import FakeServer
from tests.history_helpers import new_thread, turn_ok
from tests.server import Server
from tests.sse_client import parse_sse

SUMMARY_MODEL = "summ-1"
SUMMARY = "Poems about the sea"


async def until(check: Callable[[], Any], what: str, within: float = 20) -> Any:
    """Poll `check` (sync or async) until it returns something truthy."""
    async with asyncio.timeout(within):
        while True:
            value = check()
            if asyncio.iscoroutine(value):
                value = await value
            if value:
                return value
            await asyncio.sleep(0.02)
    raise AssertionError(what)  # pragma: no cover


async def lane(client: httpx.AsyncClient, thread_id: str) -> dict[str, Any]:
    body = (await client.get(f"/api/conversations/{thread_id}/graph")).json()
    return next(t for t in body["threads"] if t["thread_id"] == thread_id)


async def summary_of(client: httpx.AsyncClient, thread_id: str) -> str | None:
    summary: str | None = (await lane(client, thread_id))["summary"]
    return summary


class TestOffline:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"summary_debounce_seconds": 0}

    async def test_derived_from_messages_and_changes_and_refreshed_on_growth(
        self, client: httpx.AsyncClient
    ) -> None:
        root = await new_thread(client)
        await turn_ok(client, root, "objective: poems; todo: draft")
        first = await until(lambda: summary_of(client, root), "a first summary")
        assert first == "objective “poems”, +1 todo · 1 turn — “objective: poems; todo: draft”"
        conv = (await client.get(f"/api/conversations/{root}")).json()
        assert conv["summary"] == first

        await turn_ok(client, root, "todo: revise")

        async def grown() -> str | None:
            s = await summary_of(client, root)
            return s if s != first else None

        assert (await until(grown, "a refreshed summary")).startswith(
            "objective “poems”, +2 todos · 2 turns"
        )
        # A branch is summarised from its own turns and what it changed from its start.
        r = await client.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
        side = r.json()["thread_id"]
        assert (await lane(client, side))["summary"] is None
        await turn_ok(client, side, "just asking")
        assert await until(lambda: summary_of(client, side), "the branch's summary") == (
            "no workspace change · 1 turn — “just asking”"
        )


class FakeSummaries:
    """A fake OpenAI-compatible server: the chat model answers "ok"; the summary model
    answers `SUMMARY`, fails (`mode = "fail"`) or waits for `release`."""

    def __init__(self) -> None:
        self.url = ""
        self.mode = "ok"
        self.release = threading.Event()
        self.summary_calls = 0

    def app(self) -> FastAPI:
        app = FastAPI()

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Response:
            body = await request.json()
            if body["model"] != SUMMARY_MODEL:
                return _stream(["ok"])
            self.summary_calls += 1
            if self.mode == "fail":
                return JSONResponse({"error": {"message": "no"}}, status_code=400)
            if self.mode == "block":
                await asyncio.to_thread(self.release.wait, 30)
            return _stream([SUMMARY[:5], SUMMARY[5:]])

        return app


def _stream(words: list[str]) -> StreamingResponse:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        body = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        return f"data: {json.dumps({**body, 'choices': [choice]})}\n\n"

    async def events() -> AsyncIterator[bytes]:
        yield chunk({"role": "assistant", "content": ""}).encode()
        for w in words:
            yield chunk({"content": w}).encode()
        yield chunk({}, "stop").encode()
        yield b"data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeSummaries]:
    fake = FakeSummaries()
    with FakeServer(fake.app()) as server:
        fake.url = f"http://127.0.0.1:{server.port}/v1"
        yield fake


class TestSummaryModel:
    @pytest.fixture
    def settings_overrides(self, fake: FakeSummaries) -> dict[str, Any]:
        fake.mode, fake.summary_calls = "ok", 0
        fake.release.clear()
        return {
            "llm": "openai",
            "llm_base_url": fake.url,
            "llm_api_key": "k",
            "llm_model": "chat-1",
            "summary_model": SUMMARY_MODEL,
            "summary_every_turns": 2,
            "summary_debounce_seconds": 0,
        }

    async def test_written_off_the_turn_path_once_per_n_turns_and_failure_keeps_it(
        self, app: FastAPI, client: httpx.AsyncClient, fake: FakeSummaries
    ) -> None:
        root = await new_thread(client)
        fake.mode = "block"
        # The turn completes while the summary model has not answered yet.
        await turn_ok(client, root, "write me poems about the sea")
        await until(lambda: fake.summary_calls == 1, "the summary request")
        assert await summary_of(client, root) is None
        fake.release.set()
        assert await until(lambda: summary_of(client, root), "the summary") == SUMMARY

        # One call per two turns: turn 2 costs none, turn 3 one.
        fake.mode = "ok"
        await turn_ok(client, root, "second")
        await turn_ok(client, root, "third")
        await until(lambda: fake.summary_calls == 2, "the refresh at turn 3")
        await app.state.turns.summaries.idle()
        assert fake.summary_calls == 2

        # A failing summary model leaves the summary as it was.
        fake.mode = "fail"
        await turn_ok(client, root, "fourth")
        await turn_ok(client, root, "fifth")
        await until(lambda: fake.summary_calls == 3, "the failing call")
        await app.state.turns.summaries.idle()
        assert await summary_of(client, root) == SUMMARY
        conv = (await client.get(f"/api/conversations/{root}")).json()
        assert conv["summary"] == SUMMARY


def test_net_change_compares_content_not_identity() -> None:
    start = WorkspaceState(
        objective="o",
        document=None,
        todos=[TodoState("u1", "keep", False, 0)],
        preferences=[PreferenceState("p1", "short", True)],
    )
    same = WorkspaceState(
        objective="o",
        document=None,
        todos=[TodoState("u9", "keep", False, 0)],  # a copy: another uid, same todo
        preferences=[PreferenceState("p9", "short", True)],
    )
    assert NetChange.between(start, same).empty
    moved = WorkspaceState(
        objective="new aim",
        document=DocumentOut(title="", content="text"),
        todos=[TodoState("u1", "keep", True, 0), TodoState("u2", "more", False, 0)],
        preferences=[],
    )
    change = NetChange.between(start, moved)
    assert change.parts() == [
        "objective “new aim”",
        "document edited",
        "−1 preference",
        "+2 todos",
        "−1 todo",
    ]
    assert offline_summary(["first ask", "then"], change.parts()).endswith(
        "· 2 turns — “first ask”"
    )
    assert offline_summary([], []) == "no workspace change · 0 turns"


async def test_a_summary_pending_when_the_server_is_killed_is_written_after_restart(
    server_env: dict[str, str],
) -> None:
    """The pending set is in memory; a restart re-derives it from the rows (a summary
    behind its thread's turn clock), so a kill loses nothing until the branch grows."""
    # A debounce that outlives the process: the summary is still pending at the kill.
    server = Server({**server_env, "HAICO_SUMMARY_DEBOUNCE_SECONDS": "3600"})
    await server.start()
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as c:
        tid = (await c.post("/api/conversations", json={})).json()["thread_id"]
        r = await c.post(f"/api/conversations/{tid}/turns", json={"content": "todo: a sonnet"})
        assert parse_sse(r.text)[-1][0] == "turn_completed"
        assert await summary_of(c, tid) is None
        server.kill()
    restarted = Server({**server_env, "HAICO_SUMMARY_DEBOUNCE_SECONDS": "0"})
    await restarted.start()
    try:
        async with httpx.AsyncClient(base_url=restarted.url, timeout=30) as c:
            # No new turn: the restart alone writes it.
            summary = await until(lambda: summary_of(c, tid), "the pending summary")
            assert "a sonnet" in summary
            assert (await lane(c, tid))["turn_index"] == 1
    finally:
        restarted.stop()
