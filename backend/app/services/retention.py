"""Retention for branch-retaining hosts: prune old or surplus branches off the path.

A branch is a candidate when none of its threads is on the family's selected path or
leads to the working thread. Candidates older than the age limit (by last activity),
or beyond the per-family count (newest kept), are pruned together with their
descendants. Nodes a fork references, and their ancestors, are never pruned. Each
family's pruning is one transaction that also publishes `chat/turnsPruned`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.runtime import AgentRuntime
from app.db.engine import Database
from app.db.models import ChatHead, Conversation
from app.events import log as action_log
from app.services.family import Family, Node, fork_references, parse_node
from app.services.history import PruneResult, after_prune, prune_in

log = logging.getLogger("haico.retention")


@dataclass
class RetentionReport:
    pruned_turn_ids: dict[str, list[str]] = field(default_factory=dict)


def _lineage(family: Family, thread_id: str) -> set[str]:
    out: set[str] = set()
    current: str | None = thread_id
    while current is not None and current not in out and current in family.threads:
        out.add(current)
        current = family.threads[current].parent_thread_id
    return out


def _descendants(family: Family, thread_id: str) -> set[str]:
    children: dict[str, list[str]] = {}
    for t in family.threads.values():
        if t.parent_thread_id:
            children.setdefault(t.parent_thread_id, []).append(t.thread_id)
    out: set[str] = set()
    stack = [thread_id]
    while stack:
        current = stack.pop()
        if current in out:
            continue
        out.add(current)
        stack.extend(children.get(current, []))
    return out


async def prune_family_in(
    s: AsyncSession,
    root_thread_id: str,
    *,
    max_age: timedelta | None,
    max_branches: int | None,
    now: datetime,
) -> PruneResult:
    head = await s.get(ChatHead, root_thread_id)
    family = await Family.load(s, root_thread_id)
    head_node = parse_node(head.head_turn_id) if head and head.head_turn_id else None
    selected: set[Node] = set(family.ancestors(head_node))
    working = head.working_thread_id if head else root_thread_id
    keep_threads = _lineage(family, working) | {n[0] for n in selected}
    activity = dict(
        (
            await s.execute(
                select(Conversation.thread_id, Conversation.updated_at).where(
                    Conversation.thread_id.in_(list(family.threads))
                )
            )
        ).all()
    )
    candidates = [
        t
        for t in family.threads.values()
        if t.status == "active" and t.thread_id not in keep_threads
    ]
    candidates.sort(key=lambda t: _aware(activity[t.thread_id]), reverse=True)
    doomed_threads: set[str] = set()
    for i, t in enumerate(candidates):
        too_old = max_age is not None and now - _aware(activity[t.thread_id]) > max_age
        surplus = max_branches is not None and i >= max_branches
        if too_old or surplus:
            doomed_threads |= _descendants(family, t.thread_id) - keep_threads
    refs = await fork_references(s, list(family.threads))
    doomed = {
        n for n in family.nodes if n[0] in doomed_threads and n not in selected
    } - family.protected(refs)
    result = await prune_in(s, family, doomed, keep_threads=keep_threads)
    if result.turn_ids:
        await action_log.append_chat(
            s, root_thread_id, {"type": "chat/turnsPruned", "turnIds": result.turn_ids}
        )
    return result


async def apply(
    db: Database,
    runtime: AgentRuntime,
    *,
    max_age_days: float | None,
    max_branches: int | None,
) -> RetentionReport:
    """Apply the policy to every family that has branches."""
    report = RetentionReport()
    if max_age_days is None and max_branches is None:
        return report
    max_age = timedelta(days=max_age_days) if max_age_days is not None else None
    async with db.read() as s:
        roots = (
            (
                await s.execute(
                    select(Conversation.root_thread_id)
                    .where(Conversation.thread_id != Conversation.root_thread_id)
                    .distinct()
                )
            )
            .scalars()
            .all()
        )
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


def _aware(ts: datetime) -> datetime:
    return ts if ts.tzinfo else ts.replace(tzinfo=UTC)
