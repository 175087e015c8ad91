"""The runtime every CLI command shares (`haico.cli.runtime.agent_runtime`): built with
the offline model whatever provider the settings name, so a command works with the
provider unreachable; transcripts it writes persist; it is closed on the way out, also
when the command fails (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.models import OfflineChatModel
from haico.cli.runtime import agent_runtime
from haico.config import Settings
from haico.db.engine import Database
from haico.domain import new_thread_id


@pytest.fixture
def unreachable(settings: Settings) -> Settings:
    """The settings of a server whose chat model is a provider nobody answers for."""
    return settings.model_copy(
        update={"llm": "openai", "llm_base_url": "http://127.0.0.1:9/v1", "llm_api_key": "x"}
    )


async def test_a_command_runtime_is_offline_and_its_transcripts_persist(
    unreachable: Settings,
) -> None:
    await setup_checkpointer(unreachable)
    db = Database(unreachable.sql_url)
    thread_id = new_thread_id()
    try:
        async with agent_runtime(unreachable, db) as runtime:
            assert isinstance(runtime.model, OfflineChatModel)
            await runtime.seed(
                thread_id=thread_id,
                messages=[HumanMessage("hello"), AIMessage("hi")],
                metadata={"source": "cli"},
            )
        assert runtime.store is None
        async with agent_runtime(unreachable, db) as again:
            seen = [(m.role, m.content) for m in await again.messages(thread_id)]
        assert seen == [("user", "hello"), ("assistant", "hi")]
    finally:
        await db.dispose()


async def test_a_failing_command_still_closes_its_runtime(unreachable: Settings) -> None:
    await setup_checkpointer(unreachable)
    db = Database(unreachable.sql_url)
    try:
        with pytest.raises(LookupError, match="the command failed"):
            async with agent_runtime(unreachable, db) as runtime:
                raise LookupError("the command failed")
        assert runtime.store is None
    finally:
        await db.dispose()
