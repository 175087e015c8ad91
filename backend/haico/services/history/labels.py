"""Step labels ("4.1.2"), as the studio shows them: a node's turn number followed by
its thread's suffix. The root's suffix is empty; a branch takes the next ordinal of
its parent's path in creation order; a branch opened at its parent's tip continues
the count while it is the live continuation. The same rule as the studio's
`features/graph/lib/graph.ts` (`threadSuffixes`), on the shown threads of a family, so
exports and path documents name steps exactly as the trajectory panel does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from haico.db.repositories.threads import ThreadRow
from haico.services.families.model import first_owned_turn


@dataclass
class _Counter:
    next: int = 1


def _first_at_point(children: Mapping[str, list[ThreadRow]], thread: ThreadRow) -> bool:
    siblings = children.get(thread.parent_thread_id or "", [])
    first = next((s for s in siblings if s.branch_point_turn == thread.branch_point_turn), None)
    return first is not None and first.thread_id == thread.thread_id


def suffixes(
    threads: Sequence[ThreadRow], node_times: Mapping[tuple[str, int], datetime]
) -> dict[str, list[int]]:
    """thread id -> its label suffix. `threads` are the shown threads (parents before
    children); `node_times` the start of node (parent, branch point + 1) where known."""
    by_id = {t.thread_id: t for t in threads}
    order = sorted(enumerate(threads), key=lambda it: (it[1].created_at, it[0]))
    children: dict[str, list[ThreadRow]] = {}
    for _, t in order:
        if t.parent_thread_id is not None and t.parent_thread_id in by_id:
            children.setdefault(t.parent_thread_id, []).append(t)

    def live(t: ThreadRow) -> bool:
        parent = by_id.get(t.parent_thread_id or "")
        if parent is None or t.branch_point_turn is None:
            return False
        return parent.turn_index == t.branch_point_turn and _first_at_point(children, t)

    def was(t: ThreadRow) -> bool:
        if live(t):
            return True
        parent = by_id.get(t.parent_thread_id or "")
        bp = t.branch_point_turn
        if parent is None or bp is None or not _first_at_point(children, t):
            return False
        if bp < first_owned_turn(parent.branch_point_turn, parent.forked_from_turn) - 1:
            return False
        later = node_times.get((parent.thread_id, bp + 1))
        return later is not None and later > t.created_at

    counters: dict[str, _Counter] = {}
    out: dict[str, list[int]] = {}
    for _, t in order:
        parent = by_id.get(t.parent_thread_id or "")
        if parent is None:
            counters[t.thread_id] = _Counter()
            out[t.thread_id] = []
            continue
        counter = counters.get(parent.thread_id) or _Counter()
        ordinal = counter.next
        counter.next += 1
        counters[t.thread_id] = counter if was(t) else _Counter()
        base = out.get(parent.thread_id, [])
        out[t.thread_id] = base if live(t) else [*base, ordinal]
    return out


def label(turn: int, suffix: Sequence[int]) -> str:
    return str(turn) if not suffix else f"{turn}." + ".".join(str(n) for n in suffix)


def continuation_points(threads: Sequence[ThreadRow]) -> list[tuple[str, int]]:
    """The nodes whose start times `suffixes` needs: (parent, branch point + 1)."""
    return [
        (t.parent_thread_id, t.branch_point_turn + 1)
        for t in threads
        if t.parent_thread_id is not None and t.branch_point_turn is not None
    ]
