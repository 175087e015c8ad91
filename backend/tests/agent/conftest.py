"""Fixtures for the agent tests: a started runtime and a thread to run turns on."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from fastapi import FastAPI

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.runtime import AgentEvent, AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import Conversation
from haico.schemas.workspace import WorkspaceOut
from haico.services.access import users
from haico.services.families import conversations
from haico.services.turns.agent_port import AgentWorkspace
from haico.services.workspace import edits as workspace
from tests.helpers import as_user


@dataclass
class Thread:
    """A conversation the tests drive turn by turn, standing in for the turn service."""

    rt: AgentRuntime
    db: Database
    user_id: int
    thread_id: str
    events: list[AgentEvent] = field(default_factory=list)

    async def advance(self) -> int:
        async with self.db.transaction() as s:
            conv = await s.get(Conversation, self.thread_id)
            assert conv is not None
            conv.turn_index += 1
            return conv.turn_index

    async def turn(self, text: str, *, early: asyncio.Future[list[Any]] | None = None) -> str:
        """Advance the clock and run one turn (with the early read of its earlier turns
        `early`, if given); its events land in `self.events`."""
        self.events = []
        index = await self.advance()

        async def on_event(event: AgentEvent) -> None:
            self.events.append(event)

        return await self.rt.run_turn(
            thread_id=self.thread_id,
            turn_index=index,
            user_message=text,
            on_event=on_event,
            early=early,
        )

    async def workspace(self) -> WorkspaceOut:
        return await workspace.get_workspace(
            self.db, principal=as_user(self.user_id), thread_id=self.thread_id
        )

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [e.data for e in self.events if e.kind == kind]


async def new_thread(rt: AgentRuntime, title: str = "agent test") -> Thread:
    assert isinstance(rt.workspace, AgentWorkspace)
    db = rt.workspace.db
    user = await users.ensure_local(db, name=rt.settings.local_user_name)
    conv = await conversations.create(db, principal=user, title=title)
    return Thread(rt, db, user.id, conv.thread_id)


async def updated_at(db: Database, thread_id: str) -> Any:
    """The thread row's `updated_at` (every live edit moves it)."""
    async with db.read() as s:
        conv = await s.get(Conversation, thread_id)
        assert conv is not None
        return conv.updated_at


@pytest.fixture
def db(app: FastAPI) -> Database:
    database: Database = app.state.db
    return database


@pytest.fixture
async def runtime(settings: Settings, db: Database) -> AsyncIterator[AgentRuntime]:
    await setup_checkpointer(settings)
    rt = AgentRuntime(settings, AgentWorkspace(db))
    await rt.start()
    try:
        yield rt
    finally:
        await rt.close()


@pytest.fixture
async def thread(runtime: AgentRuntime) -> Thread:
    return await new_thread(runtime)
