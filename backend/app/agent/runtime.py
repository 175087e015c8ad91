"""The agent runtime: the one object the services use to run turns and read transcripts.

The services own the turn clock, snapshots and the active-turn lease; the runtime owns
the LangGraph graph, the chat model and the checkpointer (the transcript store).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from app.config import Settings
from app.db.engine import Database


@dataclass
class AgentEvent:
    """Something the client should see while a turn runs.

    kind "token": data {"text": str}; "tool_call": {"name": str, "args": dict};
    "workspace_changed": {"surfaces": list[str]} (objective, document, preferences,
    todos, artifacts).
    """

    kind: Literal["token", "tool_call", "workspace_changed"]
    data: dict[str, Any] = field(default_factory=dict)


OnEvent = Callable[[AgentEvent], Awaitable[None]]


@dataclass
class TranscriptMessage:
    role: Literal["user", "assistant", "tool"]
    content: str
    turn_index: int
    extra: dict[str, Any] = field(default_factory=dict)


class AgentRuntime:
    """Owns the checkpointer(s), the chat model and the compiled graph."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.settings = settings
        self.db = db

    async def start(self) -> None:
        """Open the checkpointer (no schema setup here: `setup_checkpointer` does that)."""
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError

    async def run_turn(
        self, *, thread_id: str, turn_index: int, user_message: str, on_event: OnEvent
    ) -> str:
        """Run one turn on `thread_id` and return the final reply text.

        The caller has already advanced the turn clock to `turn_index` and captured the
        snapshot. Tools edit the workspace through the services, each in its own
        transaction. If the run fails or is cancelled, the user message and whatever
        reply streamed so far are still written to the transcript before re-raising.
        """
        raise NotImplementedError

    async def messages(self, thread_id: str) -> list[TranscriptMessage]:
        """The thread's whole transcript (inherited prefix included), from the checkpointer."""
        raise NotImplementedError

    async def raw_messages(self, thread_id: str) -> list[Any]:
        """The thread's LangChain messages, as stored."""
        raise NotImplementedError

    async def seed(self, *, thread_id: str, messages: list[Any], metadata: dict[str, Any]) -> None:
        """Write `messages` as the whole transcript of a new thread: one state update
        through the agent's own state schema, no model call."""
        raise NotImplementedError

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint of the thread (best effort is the caller's choice)."""
        raise NotImplementedError

