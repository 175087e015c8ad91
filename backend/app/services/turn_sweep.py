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
from datetime import timedelta

from app.agent.runtime import AgentRuntime
from app.db.engine import Database
from app.db.repositories import snapshots as snap_repo
from app.db.repositories import threads as repo
from app.domain import NodeId, NodeState, aware, now
from app.events import actions
from app.events import log as action_log
from app.services import heads
from app.services.running_turn import RunningTurn

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
    abandoned: frozenset[str] = frozenset(),
) -> list[str]:
    """Mark turns whose serving process is gone as failed; return their node ids.

    `process_id` and `running` (family roots) are this process's: its own live turns
    are skipped, its own abandoned ones go stale like anyone else's. `abandoned` (node
    ids) are its own turns whose end it could not record: they are swept at once.
    """
    cutoff = now() - stale_after
    swept: list[str] = []
    lost: list[tuple[str, int, str, str]] = []
    async with db.transaction() as s:
        for row in await repo.all_active_turns(s):
            heartbeat = aware(row.heartbeat_at)
            if row.process_id == process_id:
                node = NodeId.format(row.thread_id, row.turn_index)
                if row.root_thread_id in running or (heartbeat >= cutoff and node not in abandoned):
                    continue
            elif heartbeat >= cutoff and not is_dead_local(row.process_id, own=process_id):
                continue
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
            await heads.advance_head(
                s, root_thread_id=row.root_thread_id, thread_id=row.thread_id, turn_id=stale_id
            )
            ended = actions.turn_ended(
                stale_id,
                state=NodeState.ERROR,
                duration_ms=0,
                code="server_lost",
                message="the serving process stopped",
            )
            await action_log.append_chat(s, row.root_thread_id, ended)
            swept.append(stale_id)
            partial = await action_log.turn_text(s, row.root_thread_id, stale_id)
            lost.append((row.thread_id, row.turn_index, row.user_message, partial))
    for thread_id, turn_index, message, partial in lost:
        try:
            await runtime.record_lost_turn(
                thread_id=thread_id,
                turn_index=turn_index,
                user_message=message,
                partial_reply=partial,
            )
        except Exception:
            log.exception("could not record the lost turn %s:%s", thread_id, turn_index)
    if swept:
        log.warning("marked %d abandoned turn(s) as failed: %s", len(swept), swept)
    return swept


async def keep_lease(db: Database, turn: RunningTurn, *, every: float, owner: str) -> None:
    """The running turn's heartbeat: refresh the lease every `every` seconds, and
    cancel the turn when a cancel was requested (by any process) or the lease is gone."""
    while True:
        await asyncio.sleep(every)
        try:
            async with db.transaction() as s:
                row = await repo.get_active_turn(s, turn.root_thread_id)
                if row is None or row.process_id != owner:
                    cancel = True
                else:
                    row.heartbeat_at = now()
                    cancel = row.cancel_requested
        except Exception:
            log.exception("heartbeat of %s failed", turn.node_id)
            continue
        if cancel and turn.task:
            turn.task.cancel()
            return
