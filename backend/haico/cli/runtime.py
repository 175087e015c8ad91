"""The agent runtime a CLI command works with, built in one place for every command.

A command reads and writes transcripts (export, import, merge, deleting a user, the
janitor's sweep) but never asks a chat model for a reply, so its runtime is built
with the offline model: no provider is contacted and no API key is needed, whatever
`HAICO_LLM` says.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from haico.agent.models import OfflineChatModel
from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.services.turns.agent_port import AgentWorkspace


@asynccontextmanager
async def agent_runtime(settings: Settings, db: Database) -> AsyncIterator[AgentRuntime]:
    """A started runtime on `db`'s workspace with the offline model; closed on the way
    out, also when the command fails (the database stays the caller's to dispose)."""
    runtime = AgentRuntime(settings, AgentWorkspace(db), model=OfflineChatModel())
    await runtime.start()
    try:
        yield runtime
    finally:
        await runtime.close()
