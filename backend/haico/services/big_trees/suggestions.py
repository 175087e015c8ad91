"""Pruning suggestions: branches of a family worth archiving, each with its reason.

- `idle`: no activity (a turn, an edit, a rename) for `suggest_idle_days`;
- `no_workspace_change`: it owns turns, and its workspace after them is, by content,
  the one it started from;
- `same_as_sibling`: its net workspace change (`services.compare.net_change`, read through
  the snapshot rule like every as-of read) equals that of an older branch hanging
  from the same node; the older one, or the one on the selected path, is kept.

Never suggested: the family's root, the threads on the working path (the head's
lineage), archived threads (and those below them), drafts, pending and deleted
branches. Read-only.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import threads as repo
from haico.db.repositories.threads import ThreadRow
from haico.domain import aware
from haico.errors import DomainError
from haico.schemas.trees import SuggestionOut
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.compare.net_change import NetChange, clip
from haico.services.families.conversations import get_for
from haico.services.families.model import Family
from haico.services.workspace.snapshots import resolve_restore_state
from haico.services.workspace.state import live_state


def _label(row: ThreadRow) -> str:
    if row.name:
        return f"“{row.name}”"
    if row.summary:
        return f"“{clip(row.summary, 60)}”"
    return f"the branch at step {row.branch_point_turn}"


async def _net_change(s: AsyncSession, family: Family, row: ThreadRow) -> NetChange | None:
    """The branch's net change; None when it owns no turn or its start is unreadable."""
    first = family.first_owned(row.thread_id)
    if row.turn_index < first:
        return None
    conv = await repo.get_thread(s, row.thread_id)
    if conv is None:
        return None
    try:
        start = await resolve_restore_state(s, conv, first - 1)
    except DomainError:  # a snapshot pruned away: say nothing rather than guess
        return None
    return NetChange.between(start, await live_state(s, conv))


async def suggest(
    db: Database, *, principal: Principal, thread_id: str, idle_after: timedelta, now: datetime
) -> list[SuggestionOut]:
    """The family's branches worth archiving, oldest branch first."""
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        root = conv.root_thread_id
        family = await Family.load(s, root)
        head = await heads_repo.get_head(s, root)
        working = head.working_thread_id if head is not None else root
        keep = {t.thread_id for t in family.lineage(working)} | {root}
        archived = family.archived()
        branches = [
            t
            for t in family.shown(root)
            if t.parent_thread_id is not None and not t.deleted and t.thread_id not in archived
        ]
        changes = {t.thread_id: await _net_change(s, family, t) for t in branches}

    out: list[SuggestionOut] = []
    kept_change: dict[tuple[str, NetChange], ThreadRow] = {}
    # Siblings meet in this order: the kept path first, then by creation.
    ordered = sorted(branches, key=lambda t: (t.thread_id not in keep, aware(t.created_at)))
    for row in ordered:
        change = changes[row.thread_id]
        if change is None or change.empty:
            continue
        key = (str(family.branch_point_node(row.thread_id)), change)
        first = kept_change.setdefault(key, row)
        if first is not row and row.thread_id not in keep:
            did = ", ".join(change.parts())
            out.append(
                SuggestionOut(
                    thread_id=row.thread_id,
                    reason="same_as_sibling",
                    detail=f"Same net change as {_label(first)}: {did}",
                )
            )
    for row in branches:
        if row.thread_id in keep:
            continue
        idle = now - aware(row.updated_at)
        if idle > idle_after:
            days = idle.days
            span = f"{days} days" if days >= 2 else f"{int(idle.total_seconds() // 3600)} hours"
            out.append(
                SuggestionOut(
                    thread_id=row.thread_id, reason="idle", detail=f"No activity for {span}"
                )
            )
        change = changes[row.thread_id]
        if change is not None and change.empty:
            n = row.turn_index - family.first_owned(row.thread_id) + 1
            turns = f"{n} turn" + ("" if n == 1 else "s")
            out.append(
                SuggestionOut(
                    thread_id=row.thread_id,
                    reason="no_workspace_change",
                    detail=f"{turns}, and the workspace is as the branch found it",
                )
            )
    position = {t.thread_id: i for i, t in enumerate(branches)}
    out.sort(key=lambda x: (position[x.thread_id], x.reason))
    return out
