"""Turns: the turn clock, the snapshot that makes a turn a commit, and the active-turn lease.

A turn runs in three steps:

1. One write opens it (`services.turns.opening`): the family's active-turn row is
   inserted (its primary key is the family root, so a second send fails at once with
   `TurnInProgress`), the thread's turn clock advances to k, and snapshot k captures
   the workspace *before* the agent acts (see `services.workspace.snapshots` for the rule).
2. The agent runs in a task owned by this process, not by the HTTP request: a client
   that disconnects does not stop it. A heartbeat keeps the lease fresh and picks up
   cancellation requested by any process.
3. One transaction closes it: the node's state (`complete`, `cancelled` or `error`),
   its reply, and the lease row removed. Failed and cancelled turns stay nodes.

A process that dies mid-turn leaves a lease whose heartbeat goes stale; the sweep
(`services.turns.sweep`, run on start and periodically) marks such turns `error` and
frees the family. The heartbeat itself is `sweep.keep_lease`.

The sender's stream (`POST …/turns`) takes each kind of event from one source only,
so nothing can reach it twice:

- the turn itself sends what is about it: `turn_started`, each token as the model
  streams it, each tool call once it is logged, and its end;
- the log, through the bus (`_pump`), sends only `workspace_changed` for the turn's
  thread: edits, made by the agent's tools or by anyone else, which the turn does not
  send itself. Nothing else from the log reaches the sender.

The end waits until the pump has passed the entry that ends the turn in the log, so
every edit logged before it reaches the sender first. The log keeps the turn's text
coalesced (`DeltaLog`); the sender never reads it back.

One piece on purpose: `TurnManager` is one turn's life in this process (open, drive,
end, close, cancel) and the loops that serve it (the sweep, the stream's pump); the
rules it applies live beside it (`opening`, `closing`, `sweep`, `running`, `jobs`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import timedelta
from typing import Any

from haico.agent.profiles import RunProfile, configured_model
from haico.agent.runtime import AgentEvent, AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.db.outage import is_store_outage, log_failure
from haico.db.repositories import heads as heads_repo
from haico.domain import NodeId, NodeState
from haico.errors import Conflict, DomainError, InvalidInput, StoreUnavailable
from haico.events import actions
from haico.events.bus import EventBus
from haico.events.coalescer import DeltaLog
from haico.process import background
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.big_trees import pruning
from haico.services.big_trees.summaries import Summarizer
from haico.services.families import titles
from haico.services.families.conversations import get_for
from haico.services.profiles import service as profiles
from haico.services.search.vectors import VectorFiller
from haico.services.turns.closing import Closer
from haico.services.turns.jobs import JobRunner
from haico.services.turns.opening import Detour, Send, open_after, open_turn
from haico.services.turns.running import RunningTurn, TurnEvent, make_process_id, short_error
from haico.services.turns.sweep import keep_lease, sweep_stale
from haico.services.workspace.live_edit import ACTOR, Actor

log = logging.getLogger("haico.turns")


def edits_thread(action: actions.Action, thread_id: str) -> bool:
    """Whether `action` is an edit of `thread_id`'s workspace: the one kind of logged
    action a turn's sender gets from the log (see the module doc)."""
    return action.get("type") == "haico/workspaceChanged" and action.get("threadId") == thread_id


class TurnManager:
    """Runs this process's turns and keeps their leases alive."""

    def __init__(
        self, settings: Settings, db: Database, runtime: AgentRuntime, bus: EventBus
    ) -> None:
        self.settings = settings
        self.db = db
        self.runtime = runtime
        self.bus = bus
        self.process_id = make_process_id()
        self.running: dict[str, RunningTurn] = {}
        self.deltas = DeltaLog(db)
        # The one write that ends a turn (its node, reply, head and lease).
        self.closer = Closer(settings, db, self.deltas, self.process_id)
        self.titles = titles.Retitler(settings, db)
        # Own turns whose end could not be recorded (the database was unreachable):
        # the next sweep that reaches the database closes them as failed nodes, with
        # the provenance each measured (node id -> values; empty when not measured).
        self.abandoned: dict[str, dict[str, Any]] = {}
        self._shutting_down = False
        self._sweeper: asyncio.Task[None] | None = None
        # Branch summaries, refreshed in the background after a turn closes.
        self.summaries = Summarizer(settings, db)
        # Search vectors a merge left to compute after its commit.
        self.vectors = VectorFiller(db)
        # Background jobs (replays), which take their turns through this manager.
        self.jobs = JobRunner(settings, db, self.process_id)

    # ---- lifecycle ----

    async def start(self) -> None:
        await self.sweep_stale()
        await self.summaries.resume()  # what a dead process left pending
        await self.vectors.resume()
        self._sweeper = asyncio.create_task(self._sweep_forever())
        await self.jobs.start()

    async def close(self) -> None:
        self._shutting_down = True
        await self.jobs.close()
        await background.stop(self._sweeper)
        turns = list(self.running.values())
        for turn in turns:
            if turn.task is not None:
                turn.task.cancel()
            # The streams stop reading the log (the bus is closing next): each turn
            # ends its sender's stream without waiting for it.
            if turn.pump is not None:
                turn.pump.cancel()
        for turn in turns:
            if turn.task is not None:
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await turn.task
        await self.summaries.close()
        await self.vectors.close()
        await self.deltas.close()
        await self.titles.close()

    async def _sweep_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_seconds)
            try:
                await self.sweep_stale()
            except Exception as exc:
                log_failure(log, "stale-turn sweep failed", exc)

    async def sweep_stale(self) -> list[str]:
        """Mark turns whose serving process is gone as failed; return their node ids."""
        swept = await sweep_stale(
            self.db,
            self.runtime,
            stale_after=timedelta(seconds=self.settings.turn_stale_seconds),
            process_id=self.process_id,
            running=set(self.running),
            abandoned=dict(self.abandoned),
        )
        for node_id in swept:
            self.abandoned.pop(node_id, None)
        return swept

    # ---- turns ----

    async def start_turn(
        self,
        *,
        principal: Principal,
        thread_id: str,
        content: str,
        force: bool = False,
        profile_id: str | None = None,
        profile: RunProfile | None = None,
        create: bool = False,
    ) -> RunningTurn:
        """Open a turn (lease, clock, snapshot) and start the agent; see the module doc.
        `profile_id` runs this one turn with that profile instead of the branch's
        (`profile`: one already checked, a replay's); `create`: a missing thread is
        created with the turn (`turn_open`)."""
        content = content.strip()
        if not content:
            raise InvalidInput("content: must not be empty")
        if len(content) > self.db.limits.message_chars:
            raise InvalidInput(f"content: at most {self.db.limits.message_chars} characters")
        override = profile
        if profile_id is not None:
            override = await profiles.resolve(
                self.db, self.settings, principal=principal, profile_id=profile_id
            )
        send = Send(
            self.process_id, principal, thread_id, content, create, replay=profile is not None
        )
        # The agent's first read (its earlier turns) goes while the turn is opened.
        reading = self.runtime.read_earlier(thread_id)
        early: asyncio.Future[list[Any]] | None = reading
        try:
            # The send's first read decides: the turn opens at once (the common case),
            # or the read answers what must come first (an implicit checkout, a working
            # draft made a branch), which `open_after` does before it opens the turn.
            first = await open_turn(self.db, self.settings, send)
            if isinstance(first, Detour):
                reading.cancel()  # the transcript may change, or another thread run the turn
                early = None
                opened = await open_after(
                    self.db, self.runtime, self.settings, send, first, force=force
                )
            else:
                opened = first
        except BaseException:
            reading.cancel()
            raise
        turn, started, pruned = opened.turn, opened.started, opened.pruned
        if override is not None:
            turn.profile = None if override.is_default else override
            turn.replay = profile is not None
        elif turn.branch_profile_id is not None:
            turn.profile = await profiles.of_branch(self.db, self.settings, turn.branch_profile_id)
        turn.early = early
        if pruned.turn_ids:
            await pruning.after_prune(self.runtime, pruned)
        self.running[turn.root_thread_id] = turn
        self.deltas.open(turn.root_thread_id, turn.node_id)
        # The turn's own events go to the sender from here, the edits of its thread
        # from the log (`_pump`); see the module doc.
        self._emit(turn, started)
        turn.pump = asyncio.create_task(self._pump(turn), name=f"stream {turn.node_id}")
        turn.task = asyncio.create_task(self._drive(turn), name=f"turn {turn.node_id}")
        return turn

    async def _drive(self, turn: RunningTurn) -> None:
        # The edits the agent's tools make in this task are the agent's (a replay's
        # when a replay job sent the turn).
        model = turn.profile.model if turn.profile else configured_model(self.settings)
        ACTOR.set(Actor("replay" if turn.replay else "agent", model))
        heartbeat = asyncio.create_task(
            keep_lease(self.db, turn, every=self.settings.heartbeat_seconds, owner=self.process_id)
        )

        deltas = self.deltas
        part_id = deltas.part_id(turn.node_id)

        async def on_event(event: AgentEvent) -> None:
            if event.kind == "token":
                text = str(event.data.get("text", ""))
                turn.reply_parts.append(text)
                deltas.add_text(turn.node_id, text)
                # Streamed text goes to the sender token by token; the log (and every
                # follower) gets the same deltas coalesced.
                self._emit(turn, actions.delta(turn.node_id, part_id, text))
            elif event.kind == "tool_call":
                call = actions.tool_call(
                    turn.node_id,
                    call_id=str(event.data.get("id") or uuid.uuid4().hex),
                    name=str(event.data.get("name", "")),
                    args=dict(event.data.get("args") or {}),
                )
                # After the turn's text so far, in one transaction with the text of
                # every turn of this process (`DeltaLog`); sent once it is logged.
                await deltas.add_now(turn.node_id, call)
                self._emit(turn, call)
            # Workspace changes are logged by the edits themselves (haico/workspaceChanged)
            # and reach the sender from the log (`_pump`).

        final: TurnEvent
        reply = ""
        try:
            reply = await self.runtime.run_turn(
                thread_id=turn.thread_id,
                turn_index=turn.turn_index,
                user_message=turn.content,
                on_event=on_event,
                start=turn.start,
                early=turn.early,
                meter=turn.meter,
                profile=turn.profile,
            )
            turn.state = NodeState.COMPLETE
            final = TurnEvent(
                "turn_completed",
                {"turn_index": turn.turn_index, "node_id": turn.node_id, "reply": reply},
            )
        except asyncio.CancelledError:
            turn.state = NodeState.ERROR if self._shutting_down else NodeState.CANCELLED
            reply = "".join(turn.reply_parts)
            message = "the server shut down" if self._shutting_down else "the turn was cancelled"
            final = TurnEvent("error", {"code": f"turn_{turn.state}", "message": message})
        except DomainError as exc:
            turn.state = NodeState.ERROR
            reply = "".join(turn.reply_parts)
            final = TurnEvent("error", {"code": exc.code, "message": exc.message})
        except Exception as exc:
            turn.state = NodeState.ERROR
            reply = "".join(turn.reply_parts)
            if is_store_outage(exc):
                log.warning("turn %s failed: the database is unreachable", turn.node_id)
                code, message = StoreUnavailable.code, StoreUnavailable.MESSAGE
            else:
                log.exception("turn %s failed", turn.node_id)
                code, message = "agent_error", short_error(exc)
            final = TurnEvent("error", {"code": code, "message": message})
        finally:
            heartbeat.cancel()
        turn.reply = reply  # before the end is committed: the stream's last event carries it
        try:
            # Shielded: a cancel that lands while the turn closes does not stop the
            # close, nor the end of the sender's stream.
            recorded = await asyncio.shield(self._end(turn, reply, final))
        finally:
            if self.running.get(turn.root_thread_id) is turn:
                del self.running[turn.root_thread_id]
        if not recorded:
            return
        if turn.state == NodeState.COMPLETE:
            self.titles.after_turn(
                thread_id=turn.thread_id,
                turn_index=turn.turn_index,
                message=turn.content,
                reply=reply,
            )
        # The branch grew: its summary is refreshed later, never on this path.
        if not self._shutting_down:
            self.summaries.touch(turn.thread_id)

    async def _end(self, turn: RunningTurn, reply: str, final: TurnEvent) -> bool:
        """Record the turn's end (`closing.Closer.finish`), then end the sender's stream with it;
        whether the end was recorded.

        The end is sent once the pump has passed its entry in the log, so every edit
        logged before it reaches the sender first (a pump that stopped early, at
        shutdown or on a failed read of the log, is not waited for). If the end could
        not be recorded, nothing in the log ends the stream: the pump is stopped and
        the turn's own account of its end is sent; the sweep closes the turn later.
        """
        try:
            ended = await self.closer.finish(turn, reply, final)
        except Exception:
            log.exception("could not record the end of turn %s", turn.node_id)
            self.abandoned[turn.node_id] = turn.provenance
            if turn.pump is not None:
                turn.pump.cancel()
            turn.queue.put_nowait(final)
            turn.queue.put_nowait(None)
            return False
        if turn.pump is not None:
            await asyncio.wait({turn.pump})
        self._emit(turn, ended)
        turn.queue.put_nowait(None)
        return True

    def _emit(self, turn: RunningTurn, action: actions.Action) -> None:
        mapped = actions.turn_sse_event(action, reply=turn.reply)
        if mapped is not None:
            turn.queue.put_nowait(TurnEvent(*mapped))

    async def _pump(self, turn: RunningTurn) -> None:
        """The sender's stream, its part from the log: the edits of the turn's thread,
        in log order (the only events the turn does not send itself; module doc).
        Returns once it has passed the entry that ends the turn."""
        # From after `turnStarted`: with nothing logged since, the stream starts live,
        # with no read of the log.
        stream = self.bus.stream(root_thread_ids={turn.root_thread_id}, after=turn.started_seq)
        try:
            async for entry in stream:
                action = entry.action
                if edits_thread(action, turn.thread_id):
                    self._emit(turn, action)
                elif action.get("turnId") == turn.node_id and actions.ends_turn(action):
                    return
        except Exception as exc:
            # The turn still ends the stream (`_end`); only edits not yet sent are lost.
            log_failure(log, f"the stream of turn {turn.node_id} stopped reading the log", exc)
        finally:
            await stream.aclose()

    async def cancel(self, *, principal: Principal, thread_id: str) -> dict[str, Any]:
        """Cancel the family's active turn, wherever it runs."""
        async with self.db.transaction() as s:
            conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
            row = await heads_repo.get_active_turn(s, conv.root_thread_id)
            if row is None:
                raise Conflict("no turn is running in this conversation")
            row.cancel_requested = True
            root, target = conv.root_thread_id, NodeId.format(row.thread_id, row.turn_index)
        local = self.running.get(root)
        if local and local.task:
            local.task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await asyncio.wait_for(asyncio.shield(local.task), timeout=10)
            return {"node_id": target, "state": local.state}
        return {"node_id": target, "state": "cancelling"}
