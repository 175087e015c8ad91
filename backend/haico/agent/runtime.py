"""The agent runtime: the one object the services use to run turns and read transcripts.

The services own the turn clock, snapshots and the active-turn lease; the runtime owns
the LangGraph graph, the chat model and the checkpointer (the transcript store).

A turn runs with `durability="exit"`: one checkpoint per turn, written when the run
ends (normally, by an error or by cancellation), holding only that turn's messages
(the state is turn-scoped, see `state.py`). The whole transcript is the thread's
checkpoints joined oldest to newest (`raw_messages`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    HumanMessage,
    ToolMessage,
)
from langchain_core.runnables import RunnableConfig

from haico.agent.checkpointer import CheckpointStore, open_checkpointers, turn_records
from haico.agent.graph import (
    EARLIER,
    META_PREFIX,
    ON_TEXT,
    AgentGraph,
    EarlierRecords,
    OnText,
    build_graph,
    message_text,
    recent_records,
)
from haico.agent.meter import METER, Meter
from haico.agent.models import make_chat_model
from haico.agent.port import StartingFrom, WorkspacePort, WorkspaceView
from haico.agent.profiles import RUN_PROFILE, ProfileModels, RunProfile
from haico.agent.state import join_records
from haico.agent.tools import SURFACES
from haico.config import Settings
from haico.domain import NodeState

log = logging.getLogger(__name__)

DURABILITY: Literal["exit"] = "exit"
RECURSION_LIMIT = 50
# additional_kwargs keys on stored messages.
TURN_KEY = f"{META_PREFIX}turn_index"
STATE_KEY = f"{META_PREFIX}state"


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
    """Owns the checkpointer(s), the chat model and the compiled graph(s).

    On Postgres there is one saver (and one compiled graph, compiled on the shard's
    first use) per checkpoint shard; a thread always uses the graph of its shard.
    `model` chooses the chat model at construction (the CLI's offline one); without it,
    `start()` builds the one the settings name. Tests may still set `model` before
    `start()` to inject failing ones.
    """

    def __init__(
        self,
        settings: Settings,
        workspace: WorkspacePort,
        *,
        model: BaseChatModel | None = None,
    ) -> None:
        self.settings = settings
        self.workspace = workspace
        self.model: BaseChatModel | None = model
        self.store: CheckpointStore | None = None
        # Compiled on a shard's first turn, not at start: compiling one costs tens of
        # milliseconds, and a server with eight shards may serve few of them soon.
        self._graphs: dict[int, AgentGraph] = {}
        self._background: set[asyncio.Task[None]] = set()
        # The chat models of profiles other than the server's default.
        self.profiles = ProfileModels(settings)

    async def start(self) -> None:
        """Open the checkpointer (no schema setup here: `setup_checkpointer` does that)."""
        if self.model is None:
            self.model = make_chat_model(self.settings)
        self.store = await open_checkpointers(self.settings)
        self._graphs = {}

    async def close(self) -> None:
        if self._background:
            await asyncio.wait(self._background, timeout=10)
        if self.store is not None:
            await self.store.close()
            self.store = None
        self._graphs = {}

    def graph_for(self, thread_id: str) -> AgentGraph:
        if self.store is None:
            raise RuntimeError("AgentRuntime.start() has not been called")
        shard = self.store.shard(thread_id)
        graph = self._graphs.get(shard)
        if graph is None:
            assert self.model is not None  # set by start()
            saver = self.store.savers[shard]
            graph = self._graphs[shard] = build_graph(self.model, saver, self.settings)
        return graph

    def _config(
        self,
        thread_id: str,
        workspace: WorkspacePort | None = None,
        on_text: OnText | None = None,
    ) -> RunnableConfig:
        configurable: dict[str, Any] = {
            "thread_id": thread_id,
            "workspace": workspace or self.workspace,
        }
        if on_text is not None:
            configurable[ON_TEXT] = on_text
        return {"configurable": configurable, "recursion_limit": RECURSION_LIMIT}

    def read_earlier(self, thread_id: str) -> asyncio.Task[list[AnyMessage]]:
        """Start reading the thread's earlier turns, as its next run's first model call
        would (`graph.recent_records`), for `run_turn`'s `early`: a turn's opening and
        this read then wait on the databases at the same time. The caller cancels it if
        the turn does not open."""
        if self.store is None:
            raise RuntimeError("AgentRuntime.start() has not been called")
        saver = self.store.for_thread(thread_id)
        task = asyncio.ensure_future(recent_records(saver, thread_id, self.settings.context_turns))
        # Its failure is the run's to see (it reads again); never reported unretrieved.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        return task

    async def run_turn(
        self,
        *,
        thread_id: str,
        turn_index: int,
        user_message: str,
        on_event: OnEvent,
        start: WorkspaceView | None = None,
        early: asyncio.Future[list[AnyMessage]] | None = None,
        meter: Meter | None = None,
        profile: RunProfile | None = None,
    ) -> str:
        """Run one turn on `thread_id` and return the final reply text; `profile`, when
        not the default one, names the model and instructions it runs with.

        The caller has already advanced the turn clock to `turn_index` and captured the
        snapshot; `start`, when given, is the workspace that snapshot was taken from,
        which the agent's first step uses instead of reading it again, and `early` the
        read of the earlier turns started meanwhile (`read_earlier`; used if it is
        still current, see `graph.EarlierRecords`). Tools edit the
        workspace through the `WorkspacePort`, each edit committed on its own. If the
        run fails or is cancelled, the user message and whatever reply streamed so far
        are still written to the transcript before re-raising.
        """
        graph = self.graph_for(thread_id)
        workspace = StartingFrom(self.workspace, thread_id, start) if start else None
        streamed: list[str] = []

        async def on_text(text: str) -> None:
            streamed.append(text)
            if meter is not None:
                meter.text(text)
            await on_event(AgentEvent("token", {"text": text}))

        config = self._config(thread_id, workspace, on_text)
        config["configurable"][EARLIER] = EarlierRecords(early, after_turn=turn_index - 1)
        if meter is not None:
            config["configurable"][METER] = meter
        if profile is not None and not profile.is_default:
            config["configurable"][RUN_PROFILE] = self.profiles.get(profile)
        human = HumanMessage(
            content=user_message, id=str(uuid.uuid4()), additional_kwargs={TURN_KEY: turn_index}
        )
        reply = ""
        try:
            # The reply's text comes through `on_text` as the model streams it; the
            # node updates give the tool calls, the edits and the final reply.
            async for update in graph.astream(
                {"messages": [human]}, config, stream_mode="updates", durability=DURABILITY
            ):
                reply = await self._on_updates(cast(dict[str, Any], update), on_event) or reply
        except BaseException as exc:
            if meter is not None:
                meter.interrupted()
            state = (
                NodeState.CANCELLED if isinstance(exc, asyncio.CancelledError) else NodeState.ERROR
            )
            if state == NodeState.ERROR:
                log.warning("turn %s:%s failed: %r", thread_id, turn_index, exc)
            # The loop hands its unfinished exit (which writes the run's checkpoint)
            # to whoever cancelled it; let it land before recording on top of it.
            pending = [a for a in exc.args if isinstance(a, asyncio.Future)]
            await self._shielded(
                self._record_interrupted(
                    graph, config, human, "".join(streamed), state, turn_index, pending
                )
            )
            raise
        return reply

    async def _on_updates(self, payload: dict[str, Any], on_event: OnEvent) -> str | None:
        """Emit tool_call / workspace_changed events; the agent's latest reply text."""
        reply: str | None = None
        for node, update in payload.items():
            messages: list[AnyMessage] = (update or {}).get("messages") or []
            if node == "agent":
                for m in messages:
                    if isinstance(m, AIMessage):
                        for call in m.tool_calls:
                            await on_event(
                                AgentEvent(
                                    "tool_call", {"name": call["name"], "args": call["args"]}
                                )
                            )
                        reply = message_text(m)
            elif node == "tools":
                changed: set[str] = set()
                for m in messages:
                    if isinstance(m, ToolMessage) and isinstance(m.artifact, dict):
                        changed.update(m.artifact.get("surfaces") or [])
                if changed:
                    surfaces = [s for s in SURFACES if s in changed]
                    await on_event(AgentEvent("workspace_changed", {"surfaces": surfaces}))
        return reply

    async def _shielded(self, coro: Coroutine[Any, Any, None]) -> None:
        """Run `coro` to completion even if the caller is cancelled again meanwhile."""
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        await asyncio.shield(task)

    async def _record_interrupted(
        self,
        graph: AgentGraph,
        config: RunnableConfig,
        human: HumanMessage,
        partial: str,
        state: NodeState,
        turn_index: int,
        pending: list[asyncio.Future[Any]],
    ) -> None:
        try:
            if pending:
                await asyncio.wait(pending, timeout=10)
            reply = AIMessage(
                content=partial,
                id=str(uuid.uuid4()),
                additional_kwargs={TURN_KEY: turn_index, STATE_KEY: state.value},
            )
            # The user message keeps its id, so if the run's own checkpoint already
            # holds it this completes that turn record (replacing the message in
            # place) instead of starting a new one; `raw_messages` keeps the later
            # record of the two.
            await graph.aupdate_state(config, {"messages": [human, reply]}, as_node="agent")
        except Exception:
            log.exception("could not record the %s turn %s in the transcript", state, turn_index)

    async def record_lost_turn(
        self, *, thread_id: str, turn_index: int, user_message: str, partial_reply: str
    ) -> None:
        """Write the record of a turn whose process died: the user message and the reply
        streamed so far, marked `error`. Nothing happens if the turn is recorded already
        (the process died after its run wrote the checkpoint)."""
        recorded = self.to_transcript(await self.raw_messages(thread_id))
        if any(m.role == "user" and m.turn_index == turn_index for m in recorded):
            return
        human = HumanMessage(
            content=user_message, id=str(uuid.uuid4()), additional_kwargs={TURN_KEY: turn_index}
        )
        reply = AIMessage(
            content=partial_reply,
            id=str(uuid.uuid4()),
            additional_kwargs={TURN_KEY: turn_index, STATE_KEY: NodeState.ERROR.value},
        )
        await self.graph_for(thread_id).aupdate_state(
            self._config(thread_id), {"messages": [human, reply]}, as_node="agent"
        )

    async def messages(self, thread_id: str) -> list[TranscriptMessage]:
        """The thread's whole transcript (inherited prefix included), from the checkpointer."""
        return self.to_transcript(await self.raw_messages(thread_id))

    @staticmethod
    def to_transcript(messages: list[Any]) -> list[TranscriptMessage]:
        """LangChain messages as transcript entries, each tagged with its turn."""
        out: list[TranscriptMessage] = []
        turn = 0
        for m in messages:
            if isinstance(m, HumanMessage):
                stored = m.additional_kwargs.get(TURN_KEY)
                turn = stored if isinstance(stored, int) else turn + 1
                out.append(TranscriptMessage("user", message_text(m), turn))
            elif isinstance(m, AIMessage):
                extra: dict[str, Any] = {}
                if m.tool_calls:
                    extra["tool_calls"] = [
                        {"id": c["id"], "name": c["name"], "args": c["args"]} for c in m.tool_calls
                    ]
                if state := m.additional_kwargs.get(STATE_KEY):
                    extra["state"] = state
                out.append(TranscriptMessage("assistant", message_text(m), turn, extra))
            elif isinstance(m, ToolMessage):
                extra = {"name": m.name, "tool_call_id": m.tool_call_id}
                if m.status == "error" or message_text(m).startswith("Error:"):
                    extra["status"] = "error"
                out.append(TranscriptMessage("tool", message_text(m), turn, extra))
        return out

    @staticmethod
    def prefix_through(messages: list[Any], turn: int) -> list[Any]:
        """The messages of turns 1..`turn`, cut by each message's recorded turn index
        (a killed or failed turn keeps its number), never by counting user messages."""
        out: list[Any] = []
        current = 0
        for m in messages:
            if isinstance(m, HumanMessage):
                stored = m.additional_kwargs.get(TURN_KEY)
                current = stored if isinstance(stored, int) else current + 1
            if current > turn:
                break
            out.append(m)
        return out

    async def raw_messages(self, thread_id: str) -> list[Any]:
        """The thread's LangChain messages, as stored: every checkpoint's turn record,
        oldest first, joined by message id (a turn recorded twice counts once, in its
        latest version)."""
        if self.store is None:
            raise RuntimeError("AgentRuntime.start() has not been called")
        return join_records(await turn_records(self.store.for_thread(thread_id), thread_id))

    async def seed(self, *, thread_id: str, messages: list[Any], metadata: dict[str, Any]) -> None:
        """Write `messages` as the whole transcript of a new thread: one state update
        through the agent's own state schema, no model call. It becomes the thread's
        first turn record, holding the whole prefix."""
        config = self._config(thread_id)
        # Checkpoint metadata keeps only scalars; anything richer is stored as JSON.
        config["metadata"] = {
            k: v if isinstance(v, str | int | float | bool) else json.dumps(v)
            for k, v in metadata.items()
        }
        await self.graph_for(thread_id).aupdate_state(
            config, {"messages": list(messages)}, as_node="agent"
        )

    async def delete_thread(self, thread_id: str) -> None:
        """Remove every checkpoint of the thread (best effort is the caller's choice)."""
        if self.store is None:
            raise RuntimeError("AgentRuntime.start() has not been called")
        await self.store.for_thread(thread_id).adelete_thread(thread_id)
