"""Pruning: removing nodes a family no longer keeps (linear hosts, and retention).

A linear host keeps only the selected path: when a send continues from an earlier
node, every node no longer on the path is removed. A branch-retaining host may set a
retention policy: branches off the selected path that are older than the age limit
(by last activity), or beyond the per-family count (newest kept), are pruned with
their descendants. Archived branches (and the branches above them) are exempt and
do not count. Either way nodes a fork references, and their ancestors, are never
pruned, the SQL rows go in the caller's transaction with `chat/turnsPruned`, and the
checkpointer is brought in line after commit (`after_prune`, best effort).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import flag_modified

from haico.agent.runtime import AgentRuntime
from haico.db.engine import Database
from haico.db.models import ChatHead
from haico.db.repositories import consistency as consistency_repo
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as repo
from haico.domain import BranchStatus, NodeId, aware
from haico.events import actions
from haico.events import log as action_log
from haico.services.families.model import Family
from haico.services.history import heads
from haico.services.history.seeding import transcript_prefix
from haico.services.workspace.snapshots import replace_workspace_in, resolve_restore_state

log = logging.getLogger("haico.pruning")


@dataclass
class PruneResult:
    turn_ids: list[str] = field(default_factory=list)
    removed_threads: list[str] = field(default_factory=list)
    # thread -> highest turn it keeps; its transcript is cut back after commit
    truncated_threads: dict[str, int] = field(default_factory=dict)


async def prune_in(
    s: AsyncSession, family: Family, doomed: set[NodeId], *, keep_threads: set[str]
) -> PruneResult:
    """Delete the given nodes (snapshots, artifacts; whole threads when nothing is left)."""
    result = PruneResult()
    if not doomed:
        return result
    by_thread: dict[str, list[int]] = {}
    for node in doomed:
        by_thread.setdefault(node.thread_id, []).append(node.turn)
    for thread_id, ks in by_thread.items():
        owned_left = [n.turn for n in family.nodes if n.thread_id == thread_id and n not in doomed]
        if not owned_left and thread_id not in keep_threads:
            await repo.delete_thread_rows(s, thread_id)
            result.removed_threads.append(thread_id)
            continue
        # The thread is cut back to its last retained turn: its live rows become the
        # workspace after that turn (read before its snapshots go), so that turn stays
        # restorable (`restore_source` reads the live rows then).
        keep_upto = max(owned_left, default=family.first_owned(thread_id) - 1)
        conv = await repo.get_thread(s, thread_id)
        assert conv is not None
        state = None
        if keep_upto < conv.turn_index:
            state = await resolve_restore_state(s, conv, keep_upto)
        await snap_repo.delete_nodes(s, thread_id, ks)
        if state is not None:
            await replace_workspace_in(s, conv, state)
            # The thread row is written with its live rows, even when the objective
            # stays: a turn opened from unlocked reads checks that row's version.
            flag_modified(conv, "objective")
        result.truncated_threads[thread_id] = keep_upto
    # Threads that own no retained node and hang from a removed node or thread (at any
    # depth: repeat until nothing changes) are abandoned futures too.
    retained_owners = {n.thread_id for n in family.nodes if n not in doomed}
    changed = True
    while changed:
        changed = False
        for t in family.threads.values():
            if (
                t.parent_thread_id is None
                or t.thread_id in result.removed_threads
                or t.thread_id in keep_threads
                or t.thread_id in retained_owners
            ):
                continue
            anchor = family.branch_point_node(t.thread_id)
            if t.parent_thread_id in result.removed_threads or (
                anchor is not None and anchor in doomed
            ):
                await repo.delete_thread_rows(s, t.thread_id)
                result.removed_threads.append(t.thread_id)
                changed = True
    result.turn_ids = sorted(str(n) for n in doomed)
    return result


async def _publish(s: AsyncSession, root_thread_id: str, result: PruneResult) -> None:
    if result.turn_ids:
        await action_log.append_chat(s, root_thread_id, actions.turns_pruned(result.turn_ids))


async def linear_prune_in(
    s: AsyncSession, head: ChatHead, *, active: NodeId | None = None
) -> PruneResult:
    """On a linear host: remove every node not on the selected path (forks protected).

    `active` is the turn being started (its snapshot is already written): it is never
    pruned. The root thread always stays, since it names the family, even when none
    of its nodes does.
    """
    family = await Family.load(s, head.root_thread_id, nodes=True)
    head_node = NodeId.parse(head.head_turn_id) if head.head_turn_id else None
    selected = set(family.ancestors(head_node))
    if active is not None:
        selected.add(active)
    refs = await repo.fork_references(s, list(family.threads))
    kept = selected | family.protected(refs)
    keep = {head.working_thread_id, head.root_thread_id} | {n.thread_id for n in kept}
    result = await prune_in(s, family, family.nodes - kept, keep_threads=keep)
    await _publish(s, head.root_thread_id, result)
    return result


async def after_prune(runtime: AgentRuntime, result: PruneResult) -> None:
    """Bring the checkpointer in line with a committed prune (best effort, logged)."""
    for thread_id in result.removed_threads:
        try:
            await runtime.delete_thread(thread_id)
        except Exception:
            log.exception("could not delete the transcript of pruned thread %s", thread_id)
    for thread_id, keep_upto in result.truncated_threads.items():
        try:
            messages = await runtime.raw_messages(thread_id)
            prefix = transcript_prefix(messages, keep_upto)
            if len(prefix) != len(messages):
                await runtime.delete_thread(thread_id)
                await runtime.seed(
                    thread_id=thread_id,
                    messages=prefix,
                    metadata={"source": "prune", "kept_through_turn": keep_upto},
                )
        except Exception:
            log.exception("could not cut back the transcript of %s", thread_id)


# ---- retention ----


@dataclass
class RetentionReport:
    pruned_turn_ids: dict[str, list[str]] = field(default_factory=dict)


async def prune_family_in(
    s: AsyncSession,
    root_thread_id: str,
    *,
    max_age: timedelta | None,
    max_branches: int | None,
    now: datetime,
) -> PruneResult:
    """Apply the retention policy to one family, in the caller's transaction.

    It takes the family's head lock, as checkout does, so a concurrent checkout can
    never leave the head on a node pruned here.
    """
    head = await heads.lock_head(s, root_thread_id, nowait=False)
    family = await Family.load(s, root_thread_id, nodes=True)
    head_node = NodeId.parse(head.head_turn_id) if head.head_turn_id else None
    selected = set(family.ancestors(head_node))
    working = head.working_thread_id
    keep_threads = {t.thread_id for t in family.lineage(working)} | {n.thread_id for n in selected}
    # Archived branches are kept: archiving is the safe alternative to deletion, so
    # retention never removes one, nor a branch with an archived one below it.
    archived = family.archived()
    candidates = [
        t
        for t in family.threads.values()
        if t.status == BranchStatus.ACTIVE
        and t.thread_id not in keep_threads
        and not family.descendants(t.thread_id) & archived
    ]
    candidates.sort(key=lambda t: aware(t.updated_at), reverse=True)
    doomed_threads: set[str] = set()
    for i, t in enumerate(candidates):
        too_old = max_age is not None and now - aware(t.updated_at) > max_age
        surplus = max_branches is not None and i >= max_branches
        if too_old or surplus:
            doomed_threads |= family.descendants(t.thread_id) - keep_threads
    refs = await repo.fork_references(s, list(family.threads))
    doomed = {
        n for n in family.nodes if n.thread_id in doomed_threads and n not in selected
    } - family.protected(refs)
    result = await prune_in(s, family, doomed, keep_threads=keep_threads)
    await _publish(s, root_thread_id, result)
    return result


async def apply_retention(
    db: Database,
    runtime: AgentRuntime,
    *,
    max_age_days: float | None,
    max_branches: int | None,
) -> RetentionReport:
    """Apply the policy to every family that has branches, one transaction each."""
    report = RetentionReport()
    if max_age_days is None and max_branches is None:
        return report
    max_age = timedelta(days=max_age_days) if max_age_days is not None else None
    async with db.read() as s:
        roots = await consistency_repo.families_with_branches(s)
    for root in roots:
        try:
            async with db.transaction() as s:
                result = await prune_family_in(
                    s, root, max_age=max_age, max_branches=max_branches, now=datetime.now(UTC)
                )
        except Exception:
            log.exception("retention failed for family %s", root)
            continue
        if result.turn_ids:
            report.pruned_turn_ids[root] = result.turn_ids
            await after_prune(runtime, result)
    return report
