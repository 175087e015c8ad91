"""A running turn as this process holds it: its identity, its state, and the queue of
events its sender reads (see `services.turns` for how a turn runs)."""

from __future__ import annotations

import asyncio
import os
import socket
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from haico.agent.meter import Meter
from haico.agent.port import WorkspaceView
from haico.agent.profiles import RunProfile
from haico.domain import NodeId, NodeState, now


def make_process_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass
class TurnEvent:
    """One SSE event of a turn: `name` is the SSE event, `data` its JSON payload."""

    name: str
    data: dict[str, Any]


class _Nothing:
    """No event held back (distinct from None, the end of the stream)."""


_NOTHING = _Nothing()


@dataclass
class RunningTurn:
    root_thread_id: str
    thread_id: str
    turn_index: int
    parent_turn_id: str | None
    content: str
    user_id: int
    queue: asyncio.Queue[TurnEvent | None] = field(default_factory=asyncio.Queue)
    task: asyncio.Task[None] | None = None
    reply_parts: list[str] = field(default_factory=list)
    state: NodeState = NodeState.RUNNING
    started_at: datetime = field(default_factory=now)
    started_seq: int = 0
    reply: str = ""
    pump: asyncio.Task[None] | None = None
    # The workspace the turn's snapshot was taken from: where the agent starts.
    start: WorkspaceView | None = None
    # The read of the thread's earlier turns started with the open
    # (`AgentRuntime.read_earlier`).
    early: asyncio.Future[list[Any]] | None = None
    # What the turn uses (tokens, first token, tool calls): its node's provenance.
    meter: Meter = field(default_factory=Meter)
    provenance: dict[str, Any] = field(default_factory=dict)
    # The branch's model profile as its row held it when the turn opened, and the
    # profile the turn runs with (None: the server's default).
    branch_profile_id: str | None = None
    profile: RunProfile | None = None
    # A replay job's step: its tools' workspace edits are recorded as the replay's.
    replay: bool = False

    @cached_property
    def node_id(self) -> str:
        return NodeId.format(self.thread_id, self.turn_index)

    @property
    def owner(self) -> tuple[int, str]:
        """(user id, family root): whose turn this is."""
        return self.user_id, self.root_thread_id

    async def events(self) -> AsyncIterator[TurnEvent]:
        """The sender's events in order. Text that queued up while the sender was
        behind leaves as one `token` event (the same text, in fewer writes)."""
        held: TurnEvent | _Nothing | None = _NOTHING
        while True:
            event = await self.queue.get() if held is _NOTHING else held
            held = _NOTHING
            if event is None:
                return
            assert isinstance(event, TurnEvent)
            if event.name == "token":
                texts = [str(event.data.get("text", ""))]
                while not self.queue.empty():
                    following = self.queue.get_nowait()
                    if following is None or following.name != "token":
                        held = following
                        break
                    texts.append(str(following.data.get("text", "")))
                if len(texts) > 1:
                    event = TurnEvent("token", {"text": "".join(texts)})
            yield event


def short_error(exc: BaseException) -> str:
    """An exception as the one line a failed turn shows."""
    text = str(exc) or type(exc).__name__
    return text[:300]
