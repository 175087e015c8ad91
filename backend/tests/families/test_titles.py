"""Conversation titles (services/families/titles.py), through the REST API on both databases:
named after the objective or the first message until renamed; with a real model (a
fake OpenAI-compatible server) refined off the turn's path; imports marked."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse

from haico.services.families.titles import DEFAULT_TITLE, MAX_CHARS, derive
from tests.agent.test_providers import FakeServer
from tests.sse_client import send_turn

API = "/api/conversations"


async def _title(client: httpx.AsyncClient, tid: str) -> str:
    return str((await client.get(f"{API}/{tid}")).json()["title"])


def test_derive_strips_command_keywords_and_clips_at_a_word() -> None:
    assert derive("todo: call Ann; prefer: tea") == "call Ann"
    assert derive("\n  Objective:   Argue for   bike lanes \nmore") == "Argue for bike lanes"
    assert derive("   ") is None and derive(None) is None
    long = derive("word " * 40)
    assert long is not None and len(long) <= MAX_CHARS and long.endswith("…")
    assert not long[:-1].endswith(" ")


class TestOffline:
    async def test_first_message_names_a_new_conversation(self, client: httpx.AsyncClient) -> None:
        tid = (await client.post(API, json={})).json()["thread_id"]
        assert await _title(client, tid) == DEFAULT_TITLE
        status, events, _ = await send_turn(client, tid, "How do cities fund bike lanes?")
        assert status == 200 and events[-1][0] == "turn_completed"
        assert await _title(client, tid) == "How do cities fund bike lanes?"
        # later turns do not rename it
        await send_turn(client, tid, "todo: read the budget")
        assert await _title(client, tid) == "How do cities fund bike lanes?"
        listed = {c["thread_id"]: c["title"] for c in (await client.get(API)).json()}
        assert listed[tid] == "How do cities fund bike lanes?"

    async def test_the_objective_wins_over_the_message(self, client: httpx.AsyncClient) -> None:
        tid = (await client.post(API, json={})).json()["thread_id"]
        await send_turn(client, tid, "objective: Argue for bike lanes; todo: outline")
        assert await _title(client, tid) == "Argue for bike lanes"
        made = (await client.post(API, json={"objective": "Map the field"})).json()
        assert made["title"] == "Map the field"
        by_hand = (await client.post(API, json={})).json()["thread_id"]
        r = await client.put(f"{API}/{by_hand}/objective", json={"text": "Survey the tools"})
        assert r.status_code == 200
        assert await _title(client, by_hand) == "Survey the tools"

    async def test_a_rename_is_never_overwritten(self, client: httpx.AsyncClient) -> None:
        tid = (await client.post(API, json={})).json()["thread_id"]
        await client.patch(f"{API}/{tid}", json={"title": "Mine"})
        await send_turn(client, tid, "objective: Something else")
        assert await _title(client, tid) == "Mine"
        titled = (await client.post(API, json={"title": "Given"})).json()["thread_id"]
        await send_turn(client, titled, "hello")
        assert await _title(client, titled) == "Given"

    async def test_a_client_chosen_id_and_its_reuse(self, client: httpx.AsyncClient) -> None:
        tid = "th_" + "ab" * 16
        r = await client.post(API, json={"new_id": tid})
        assert r.status_code == 201 and r.json()["thread_id"] == tid
        again = await client.post(API, json={"new_id": tid})
        assert again.status_code == 409 and again.json()["code"] == "already_exists"
        bad = await client.post(API, json={"new_id": "th_nothex"})
        assert bad.status_code == 422

    async def test_an_import_is_marked(self, client: httpx.AsyncClient) -> None:
        tid = (await client.post(API, json={"title": "Essay"})).json()["thread_id"]
        await send_turn(client, tid, "todo: a")
        doc = (await client.get(f"{API}/{tid}/export")).json()
        copy = (await client.post(f"{API}/import", json=doc)).json()
        assert copy["title"] == "Essay (imported)"
        again = (await client.get(f"{API}/{copy['thread_id']}/export")).json()
        twice = (await client.post(f"{API}/import", json=again)).json()
        assert twice["title"] == "Essay (imported)"
        assert await _title(client, tid) == "Essay"


# ---- a real model: a fake OpenAI-compatible server --------------------------------


class FakeModel:
    """Answers a turn with a short text, and a title request with `title` once
    `release` is set (or with an error when `fail`)."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.fail = False
        self.title = "Funding bike lanes"
        self.title_requests = 0
        # the `model` each request named: title requests, and the chat's turns
        self.title_models: list[str] = []
        self.turn_models: list[str] = []
        self.port = 0

    def app(self) -> FastAPI:
        app = FastAPI()

        def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
            body = {
                "id": "chatcmpl-fake",
                "object": "chat.completion.chunk",
                "created": 0,
                "model": "fake-gpt",
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            }
            return f"data: {json.dumps(body)}\n\n"

        def stream(text: str) -> StreamingResponse:
            async def body() -> AsyncIterator[bytes]:
                yield chunk({"role": "assistant", "content": ""}).encode()
                for word in text.split(" "):
                    yield chunk({"content": word + " "}).encode()
                yield chunk({}, "stop").encode()
                yield b"data: [DONE]\n\n"

            return StreamingResponse(body(), media_type="text/event-stream")

        @app.post("/v1/chat/completions")
        async def completions(request: Request) -> Response:
            body = await request.json()
            system = str(body["messages"][0].get("content", ""))
            if system.startswith("You name conversations"):
                self.title_models.append(str(body.get("model")))
                self.title_requests += 1
                if self.fail:
                    return JSONResponse({"error": {"message": "no"}}, status_code=400)
                await asyncio.to_thread(self.release.wait, 30)
                return stream(f'"{self.title}."')
            if not system.startswith("You name branches"):
                self.turn_models.append(str(body.get("model")))
            return stream("Noted, thank you.")

        return app


@pytest.fixture(scope="module")
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel()
    with FakeServer(model.app()) as server:
        model.port = server.port
        yield model


async def _settled(app: FastAPI) -> None:
    """Wait until the family's turn has wholly ended and every title call is over."""
    turns = app.state.turns
    for _ in range(500):
        if not turns.running:
            break
        await asyncio.sleep(0.01)
    tasks = list(turns.titles.tasks)
    if tasks:
        await asyncio.wait(tasks, timeout=10)


async def _asked(fake: FakeModel, more_than: int) -> None:
    for _ in range(500):
        if fake.title_requests > more_than:
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the title was never asked for")


class TestRealModel:
    @pytest.fixture
    def settings_overrides(self, fake_model: FakeModel) -> dict[str, Any]:
        port = fake_model.port
        return {
            "llm": "openai",
            "llm_base_url": f"http://127.0.0.1:{port}/v1",
            "llm_model": "fake",
            "summary_model": "fake-summary",
        }

    async def test_the_model_titles_after_the_turn_which_never_waits(
        self, app: FastAPI, client: httpx.AsyncClient, fake_model: FakeModel
    ) -> None:
        fake_model.release.clear()
        fake_model.fail = False
        tid = (await client.post(API, json={})).json()["thread_id"]
        before = fake_model.title_requests
        # The title call is held by the fake server: the turn ends regardless, with the
        # derived title in place.
        status, events, _ = await send_turn(client, tid, "How do cities pay for bike lanes?")
        assert status == 200 and events[-1][0] == "turn_completed"
        assert await _title(client, tid) == "How do cities pay for bike lanes?"
        await _asked(fake_model, before)
        fake_model.release.set()
        await _settled(app)
        assert await _title(client, tid) == "Funding bike lanes"
        # The title came from the summary model (HAICO_SUMMARY_MODEL), the turn from the
        # chat model.
        assert fake_model.title_models[-1] == "fake-summary"
        assert fake_model.turn_models and set(fake_model.turn_models) == {"fake"}
        # one call per thread: a second turn asks for no title
        asked = fake_model.title_requests
        await send_turn(client, tid, "and in Paris?")
        await _settled(app)
        assert fake_model.title_requests == asked
        assert await _title(client, tid) == "Funding bike lanes"

    async def test_a_rename_made_meanwhile_wins_and_a_failure_keeps_the_derived_title(
        self, app: FastAPI, client: httpx.AsyncClient, fake_model: FakeModel
    ) -> None:
        fake_model.release.clear()
        fake_model.fail = False
        tid = (await client.post(API, json={})).json()["thread_id"]
        before = fake_model.title_requests
        await send_turn(client, tid, "first question")
        await _asked(fake_model, before)
        await client.patch(f"{API}/{tid}", json={"title": "Renamed by hand"})
        fake_model.release.set()
        await _settled(app)
        assert await _title(client, tid) == "Renamed by hand"

        fake_model.fail = True
        failing = (await client.post(API, json={})).json()["thread_id"]
        before = fake_model.title_requests
        await send_turn(client, failing, "second question")
        await _asked(fake_model, before)
        await _settled(app)
        assert await _title(client, failing) == "second question"
