"""A turn's agent starts from the workspace its snapshot recorded: the first step's
prompt holds every edit made before the send, without reading the workspace again,
and a step after a tool's edit reads it afresh."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest
from fastapi import FastAPI
from langchain_core.messages import SystemMessage

from haico.agent import runtime as runtime_module
from haico.agent.port import WorkspaceView
from haico.config import Settings
from haico.main import create_app
from haico.services.turns.agent_port import AgentWorkspace
from tests.agent.test_runtime import RecordingModel

pytestmark = pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)


class PromptRecorder(RecordingModel):
    """The offline model, keeping every call's messages (`prompts`: the system ones)."""

    @property
    def prompts(self) -> list[str]:
        return [str(m.content) for call in self.calls for m in call if isinstance(m, SystemMessage)]


@pytest.fixture
def model(monkeypatch: pytest.MonkeyPatch) -> PromptRecorder:
    recorder = PromptRecorder()
    monkeypatch.setattr(runtime_module, "make_chat_model", lambda _settings: recorder)
    return recorder


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Threads whose live workspace the agent read from the database."""
    seen: list[str] = []
    real = AgentWorkspace.read

    async def counted(self: AgentWorkspace, thread_id: str) -> WorkspaceView:
        seen.append(thread_id)
        return await real(self, thread_id)

    monkeypatch.setattr(AgentWorkspace, "read", counted)
    return seen


@pytest.fixture
async def app(settings: Settings, model: PromptRecorder) -> AsyncIterator[FastAPI]:
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


async def _send(client: httpx.AsyncClient, tid: str, content: str) -> None:
    r = await client.post(f"/api/conversations/{tid}/turns", json={"content": content})
    assert r.status_code == 200 and "event: turn_completed" in r.text, r.text


async def test_the_first_step_sees_edits_made_before_the_send_without_a_read(
    client: httpx.AsyncClient, model: PromptRecorder, reads: list[str]
) -> None:
    tid = (await client.post("/api/conversations", json={"title": "t"})).json()["thread_id"]
    await _send(client, tid, "hello")
    r = await client.put(f"/api/conversations/{tid}/objective", json={"text": "Map the coast"})
    assert r.status_code == 200
    r = await client.post(f"/api/conversations/{tid}/todos", json={"text": "survey bays"})
    assert r.status_code == 201
    model.calls.clear()
    reads.clear()
    await _send(client, tid, "what next?")
    (prompt,) = model.prompts
    assert "Map the coast" in prompt and "survey bays" in prompt
    assert reads == []


async def test_a_step_after_a_tool_edit_reads_the_workspace_again(
    client: httpx.AsyncClient, model: PromptRecorder, reads: list[str]
) -> None:
    tid = (await client.post("/api/conversations", json={"title": "t"})).json()["thread_id"]
    model.calls.clear()
    await _send(client, tid, "todo: draft the outline")
    first, after_tool = model.prompts
    assert "draft the outline" not in first
    assert "draft the outline" in after_tool
    assert reads == [tid]
