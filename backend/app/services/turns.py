"""Turns: the turn clock, the snapshot that makes a turn a commit, and the active-turn lease.

A turn runs in three steps:

1. One write opens it (`services.turn_open`): the family's active-turn row is
   inserted (its primary key is the family root, so a second send fails at once with
   `TurnInProgress`), the thread's turn clock advances to k, and snapshot k captures
   the workspace *before* the agent acts (see `services.snapshots` for the rule).
2. The agent runs in a task owned by this process, not by the HTTP request: a client
   that disconnects does not stop it. A heartbeat keeps the lease fresh and picks up
   cancellation requested by any process.
3. One transaction closes it: the node's state (`complete`, `cancelled` or `error`),
   its reply, and the lease row removed. Failed and cancelled turns stay nodes.

A process that dies mid-turn leaves a lease whose heartbeat goes stale; the sweep
(`services.turn_sweep`, run on start and periodically) marks such turns `error` and
frees the family. The heartbeat itself is `turn_sweep.keep_lease`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from datetime import timedelta
from typing import Any

from app import background
from app.agent.profiles import RunProfile, configured_model
from app.agent.runtime import AgentEvent, AgentRuntime
from app.config import Settings
from app.db.dialect import Write
from app.db.engine import Database, fault
from app.db.faults import Step
from app.db.outage import is_store_outage, log_failure
from app.db.repositories import heads as heads_repo
from app.db.repositories import snapshots as snap_repo
from app.db.repositories import threads as repo
from app.domain import NodeId, NodeState, now
from app.errors import (
    Conflict,
    DomainError,
    InvalidInput,
    StoreUnavailable,
)
from app.events import actions
from app.events import log as action_log
from app.events.bus import EventBus
from app.events.coalescer import DeltaLog
from app.services import ledger, profiles, pruning, search, titles
from app.services.access import Role
from app.services.conversations import get_owned
from app.services.jobs import JobRunner
from app.services.live_edit import ACTOR, Actor
from app.services.running_turn import RunningTurn, TurnEvent, make_process_id, short_error
from app.services.search_vectors import VectorFiller
from app.services.summaries import Summarizer
from app.services.turn_open import NotWorking, Send, open_turn, prepare_working
from app.services.turn_sweep import keep_lease, sweep_stale

log = logging.getLogger("haico.turns")

MAX_REPLY_CHARS = 20_000


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
        tasks = [t.task for t in self.running.values() if t.task]
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        for turn in list(self.running.values()):
            if turn.pump is not None:
                turn.pump.cancel()
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
        user_id: int,
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
                self.db, self.settings, user_id=user_id, profile_id=profile_id
            )
        prepared = False
        # The agent's first read (its earlier turns) goes while the turn is opened.
        early = self.runtime.read_earlier(thread_id)
        try:
            while True:
                try:
                    send = Send(self.process_id, user_id, thread_id, content, create)
                    opened = await open_turn(self.db, self.settings, send, prepared=prepared)
                    break
                except NotWorking:
                    # The common case (the posted-to thread is the working thread and
                    # not a draft) opens the turn in one transaction; anything else
                    # first makes it the working thread (`turn_open.prepare_working`), then
                    # opens the turn.
                    thread_id = await prepare_working(
                        self.db, self.runtime, user_id=user_id, thread_id=thread_id, force=force
                    )
                    prepared = True
        except BaseException:
            early.cancel()
            raise
        turn, started, pruned = opened.turn, opened.started, opened.pruned
        if override is not None:
            turn.profile = None if override.is_default else override
            turn.replay = profile is not None
        elif turn.branch_profile_id is not None:
            turn.profile = await profiles.of_branch(self.db, self.settings, turn.branch_profile_id)
        if prepared:
            early.cancel()  # another thread may have been made the working one
        else:
            turn.early = early
        if pruned.turn_ids:
            await pruning.after_prune(self.runtime, pruned)
        self.running[turn.root_thread_id] = turn
        self.deltas.open(turn.root_thread_id, turn.node_id)
        # turn_started goes to the sender at once, so it always comes first; the rest of
        # the turn's actions reach it through the log (`_pump`).
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
                # every turn of this process (`DeltaLog`).
                await deltas.add_now(turn.node_id, call)
            # Workspace changes are logged by the edits themselves (haico/workspaceChanged)
            # and reach the sender through `_pump`, like every other logged action.

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
            await asyncio.shield(self._finish(turn, reply, final))
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
        except Exception:
            log.exception("could not record the end of turn %s", turn.node_id)
            self.abandoned[turn.node_id] = turn.provenance
            # Nothing was logged to end the stream: end it here.
            if turn.pump is not None:
                turn.pump.cancel()
            turn.queue.put_nowait(final)
            turn.queue.put_nowait(None)
        finally:
            self.running.pop(turn.root_thread_id, None)

    def _emit(self, turn: RunningTurn, action: actions.Action) -> None:
        mapped = actions.turn_sse_event(action, reply=turn.reply)
        if mapped is not None:
            turn.queue.put_nowait(TurnEvent(*mapped))

    async def _pump(self, turn: RunningTurn) -> None:
        """The sender's stream: this turn's logged actions, in log order, as SSE events,
        ending with the action that ends the turn."""
        # From after `turnStarted` (sent directly): with nothing logged since, the
        # stream starts live, with no read of the log.
        stream = self.bus.stream(root_thread_ids={turn.root_thread_id}, after=turn.started_seq)
        try:
            async for entry in stream:
                action = entry.action
                kind = action.get("type")
                ours = action.get("turnId") == turn.node_id
                if kind in ("chat/delta", "chat/turnStarted") or (
                    kind == "chat/responsePart" and action["part"].get("kind") != "toolCall"
                ):
                    continue  # already sent directly (text token by token)
                edit = kind == "haico/workspaceChanged" and action.get("threadId") == turn.thread_id
                if ours or edit:
                    self._emit(turn, action)
                if ours and actions.ends_turn(action):
                    turn.queue.put_nowait(None)
                    return
        finally:
            await stream.aclose()

    async def _finish(self, turn: RunningTurn, reply: str, final: TurnEvent) -> None:
        """Close the turn: node state and reply, the head moves onto it, the lease goes,
        and the turn's last streamed text is logged before its end.

        If the transaction fails, the text is logged on its own (best effort), so the
        sweep that later closes the turn finds the whole reply that was streamed.
        """
        duration = int((now() - turn.started_at).total_seconds() * 1000)
        pending = await self.deltas.take(turn.node_id)
        try:
            await self._close(turn, reply, final, duration, pending)
        except BaseException:
            try:
                await self.deltas.give_back(turn.root_thread_id, pending)
            except Exception:
                log.exception("could not log the last text of turn %s", turn.node_id)
            raise

    async def _close(
        self,
        turn: RunningTurn,
        reply: str,
        final: TurnEvent,
        duration: int,
        pending: list[actions.Action],
    ) -> None:
        measured = ledger.provenance_values(
            self.settings, turn.meter, duration_ms=duration, profile=turn.profile
        )
        turn.provenance = measured
        usage = actions.usage(turn.node_id, measured)
        if usage is not None:
            pending = [*pending, usage]
        ended = actions.turn_ended(
            turn.node_id,
            state=turn.state,
            duration_ms=duration,
            code=str(final.data.get("code", "error")),
            message=str(final.data.get("message", "")),
        )
        if self.db.dialect.is_postgres:
            # One statement, its own transaction, run on the driver: the index write
            # reads the document itself.
            index = search.turn_entries_write(
                turn.thread_id, turn.turn_index, turn.content, reply, turn.owner
            )
            async with self.db.driver() as d:
                await d.fault(Step.CLOSE)
                await action_log.append_chat_now(
                    d, turn.root_thread_id, *pending, ended, after=self._closing(turn, reply, index)
                )
            return
        # SQLite: the document read, then the writes, in one transaction.
        async with self.db.transaction() as s:
            entries = await search.turn_entries(
                s, turn.thread_id, turn.turn_index, turn.content, reply, owner=turn.owner
            )
            await fault(s, Step.CLOSE)
            await action_log.append_chat(
                s, turn.root_thread_id, *pending, ended, after=self._closing(turn, reply, entries)
            )

    def _closing(self, turn: RunningTurn, reply: str, index: Write | None) -> list[Write]:
        """The writes that close `turn` (with its search index write `index`)."""
        closing = [
            snap_repo.node_end(
                turn.thread_id,
                turn.turn_index,
                state=turn.state,
                completed_at=now(),
                reply=reply[:MAX_REPLY_CHARS],
            ),
            index,
            ledger.provenance_write(turn.thread_id, turn.turn_index, turn.provenance),
            # (a thread still titled "New conversation" is named after this message)
            repo.turn_finished(turn.thread_id, retitle=titles.from_message(turn.content)),
            # The head moves onto the turn only if its thread still is the working one.
            heads_repo.head_advance(
                root_thread_id=turn.root_thread_id,
                working_thread_id=turn.thread_id,
                head_turn_id=turn.node_id,
            ),
            heads_repo.lease_release(
                root_thread_id=turn.root_thread_id, process_id=self.process_id
            ),
        ]
        return [w for w in closing if w is not None]

    async def cancel(self, *, user_id: int, thread_id: str) -> dict[str, Any]:
        """Cancel the family's active turn, wherever it runs."""
        async with self.db.transaction() as s:
            conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id, need=Role.EDITOR)
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
