"""The stale-turn sweep: turns whose serving process is gone become failed nodes.

A process that dies mid-turn leaves its lease row behind with a heartbeat that goes
stale (or, on this host, a process id that no longer exists). The sweep marks such a
turn `error`, frees the family, moves the head onto the node, logs the end, and then
writes the turn's transcript record from the user message kept with the lease and the
reply text already logged (best effort).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.dialect import execute_all
from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.models import ActiveTurn
from haico.db.outage import log_failure
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import ledger as ledger_repo
from haico.db.repositories import snapshots as snap_repo
from haico.domain import NodeId, NodeState, aware, now
from haico.events import actions
from haico.events import log as action_log
from haico.services.history import heads
from haico.services.ledger import provenance as ledger
from haico.services.turns.running import RunningTurn

log = logging.getLogger("haico.turns")


def is_dead_local(process_id: str, *, own: str) -> bool:
    """A lease of this host whose process is gone (or an earlier life of our pid)."""
    host, _, rest = process_id.partition(":")
    pid_text, _, _ = rest.partition(":")
    if host != socket.gethostname() or not pid_text.isdigit() or process_id == own:
        return False
    pid = int(pid_text)
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


async def sweep_stale(
    db: Database,
    runtime: AgentRuntime,
    *,
    stale_after: timedelta,
    process_id: str,
    running: set[str],
    abandoned: Mapping[str, dict[str, Any]] | None = None,
) -> list[str]:
    """Mark turns whose serving process is gone as failed; return their node ids.

    `process_id` and `running` (family roots) are this process's: its own live turns
    are skipped, its own abandoned ones go stale like anyone else's. `abandoned` (node
    id -> the provenance it measured, or empty) are its own turns whose end it could
    not record: they are swept at once. Each swept node gets a provenance row: the one
    measured when there is one, else what the log shows (`ledger.lost_provenance`).
    """
    abandoned = abandoned or {}
    cutoff = now() - stale_after

    def is_stale(row: ActiveTurn) -> bool:
        heartbeat = aware(row.heartbeat_at)
        if row.process_id == process_id:
            node = NodeId.format(row.thread_id, row.turn_index)
            return row.root_thread_id not in running and (heartbeat < cutoff or node in abandoned)
        return heartbeat < cutoff or is_dead_local(row.process_id, own=process_id)

    # A read: on SQLite it does not take the write lock every heartbeat when nothing
    # is stale (the common case); each stale family is closed in its own write below.
    async with db.read() as s:
        candidates = sorted(
            r.root_thread_id for r in await heads_repo.all_active_turns(s) if is_stale(r)
        )
    swept: list[str] = []
    lost: list[_Lost] = []
    try:
        for root_thread_id in candidates:
            closed = await _close_stale(
                db, root_thread_id, is_stale, settings=runtime.settings, measured=abandoned
            )
            if closed is not None:
                lost.append(closed)
                swept.append(NodeId.format(closed.thread_id, closed.turn_index))
    finally:
        # What was swept before a failure (the database going away midway) still gets
        # its transcript record.
        for turn in lost:
            try:
                await runtime.record_lost_turn(
                    thread_id=turn.thread_id,
                    turn_index=turn.turn_index,
                    user_message=turn.user_message,
                    partial_reply=turn.partial_reply,
                )
            except Exception:
                log.exception(
                    "could not record the lost turn %s:%s", turn.thread_id, turn.turn_index
                )
        if swept:
            log.warning("marked %d abandoned turn(s) as failed: %s", len(swept), swept)
    return swept


@dataclass(frozen=True)
class _Lost:
    """A swept turn, for its transcript record."""

    thread_id: str
    turn_index: int
    user_message: str
    partial_reply: str


async def _close_stale(
    db: Database,
    root_thread_id: str,
    is_stale: Callable[[ActiveTurn], bool],
    *,
    settings: Settings,
    measured: Mapping[str, dict[str, Any]],
) -> _Lost | None:
    """Close the family's turn as failed if its lease is still stale; None if not.

    One family per transaction, its head locked before its lease is touched: the order
    a send takes them in (head, then the lease's primary key), so a send racing the
    sweep waits for it or gets its 409, never a deadlock."""
    async with db.transaction() as s:
        await heads.lock_head(s, root_thread_id, nowait=False)
        row = await heads_repo.get_active_turn(s, root_thread_id)
        if row is None or not is_stale(row):
            return None  # closed, or taken over, while we waited for the lock
        await snap_repo.set_node_state(
            s,
            row.thread_id,
            row.turn_index,
            state=NodeState.ERROR,
            completed_at=now(),
            only_if=NodeState.RUNNING,
        )
        await s.delete(row)
        stale_id = NodeId.format(row.thread_id, row.turn_index)
        partial, tool_calls = await action_log.turn_logged(s, root_thread_id, stale_id)
        if await ledger_repo.get_provenance(s, row.thread_id, row.turn_index) is None:
            values = measured.get(stale_id) or ledger.lost_provenance(
                settings, partial_reply=partial, tool_calls=tool_calls
            )
            await execute_all(s, ledger.provenance_write(row.thread_id, row.turn_index, values))
        await s.flush()
        await fault(s, Step.SWEEP)
        await heads.advance_head(
            s, root_thread_id=root_thread_id, thread_id=row.thread_id, turn_id=stale_id
        )
        ended = actions.turn_ended(
            stale_id,
            state=NodeState.ERROR,
            duration_ms=0,
            code="server_lost",
            message="the serving process stopped",
        )
        await action_log.append_chat(s, root_thread_id, ended)
        return _Lost(row.thread_id, row.turn_index, row.user_message, partial)


async def keep_lease(db: Database, turn: RunningTurn, *, every: float, owner: str) -> None:
    """The running turn's heartbeat: refresh the lease every `every` seconds, and
    cancel the turn when a cancel was requested (by any process) or the lease is gone."""
    while True:
        await asyncio.sleep(every)
        try:
            async with db.transaction() as s:
                row = await heads_repo.get_active_turn(s, turn.root_thread_id)
                if row is None or row.process_id != owner:
                    cancel = True
                else:
                    row.heartbeat_at = now()
                    cancel = row.cancel_requested
        except Exception as exc:
            log_failure(log, f"heartbeat of {turn.node_id} failed", exc)
            continue
        if cancel and turn.task:
            turn.task.cancel()
            return
