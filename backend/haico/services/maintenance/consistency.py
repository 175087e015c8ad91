"""The consistency check behind `haico check`: read-only rules over every family.

A node is turn `T:k` of the thread T that owns it (`first_owned(T) <= k <=
T.turn_index`, see `services.families.model`); its record is the `workspace_snapshots` row
(T, k). A thread's records must be a prefix of the turns it owns: a missing record
with a later one present is a gap, and a record outside the owned turns lies beyond
the clock or before the branch point. The one shape the model allows without a
record is a pruned tail (`pruning.prune_in` cuts a thread back and leaves its clock
where it was), never on the working thread, whose path pruning keeps whole. The
turns after the last kept record have none; they are reached only through their
predecessor, which must be restorable: the last kept node of the thread, whose
workspace `restore_source` then reads from the thread's live rows (no newer record
is left), or, when the thread kept none of its own, its branch-point node, which
must be a retained node (what `make_working_in` falls back to), or the baseline for
a root or a branch at 0. Every kept node before the last is restorable from the next
record, which the prefix rule guarantees.

A family's head row must name a retained node of the family (or none), its working
thread must be a thread of the family, and the head must be the working thread's tip
(`chat_heads` invariant) — except while a turn runs: then the tip is the running
node and the head still its parent. A draft must be its family's working thread. A
pending branch or building fork younger than the janitor's age is still being built
and listed as in progress; an older one was abandoned. A checkpoint thread with no
conversation row is an orphan.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict, dataclass, field
from datetime import timedelta

from haico.agent import checkpoint_threads
from haico.agent.checkpointer import CheckpointStore
from haico.db.engine import Database
from haico.db.models import ActiveTurn, ChatHead
from haico.db.repositories import consistency as repo
from haico.db.repositories import heads as heads_repo
from haico.domain import BranchStatus, NodeId, now
from haico.services.families.model import Family


@dataclass(frozen=True)
class Problem:
    kind: str
    root_thread_id: str | None
    thread_id: str | None
    node: str | None
    reason: str


@dataclass(frozen=True)
class InProgress:
    kind: str
    root_thread_id: str
    thread_id: str
    node: str | None
    reason: str


@dataclass
class CheckReport:
    families: int = 0
    threads: int = 0
    nodes: int = 0
    problems: list[Problem] = field(default_factory=list)
    in_progress: list[InProgress] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, object]:
        return {
            "families_checked": self.families,
            "threads_checked": self.threads,
            "nodes_checked": self.nodes,
            "problems": [asdict(p) for p in self.problems],
            "in_progress": [asdict(p) for p in self.in_progress],
        }


async def check(
    db: Database,
    store: CheckpointStore | None,
    *,
    max_age_seconds: float,
    roots: Collection[str] | None = None,
) -> CheckReport:
    """Check every family (or only `roots`) and, with a `store` and no `roots`, the
    checkpoint threads; `max_age_seconds` is the janitor's age for half-built threads."""
    report = CheckReport()
    cutoff = now() - timedelta(seconds=max_age_seconds)
    # The checkpoint threads before the rows: every path commits a thread's row before
    # its first checkpoint, so a thread created meanwhile is never taken for an orphan.
    checkpointed = (
        await checkpoint_threads.thread_ids(store) if store is not None and roots is None else set()
    )
    async with db.read() as s:
        all_roots = await repo.family_roots(s)
        heads = await repo.heads(s)
        active = {row.root_thread_id: row for row in await heads_repo.all_active_turns(s)}
        pending, building = await repo.half_built_before(s, now())
        old_pending, old_building = await repo.half_built_before(s, cutoff)
        half_built = {t: "pending branch" for t in pending} | {t: "building fork" for t in building}
        abandoned = set(old_pending) | set(old_building)
        for root in all_roots if roots is None else [r for r in all_roots if r in roots]:
            family = await Family.load(s, root, nodes=True)
            report.families += 1
            report.threads += len(family.threads)
            head = heads.get(root)
            _check_threads(report, family, head.working_thread_id if head else root)
            _check_head(report, family, head, active.get(root))
            _check_building(report, family, half_built, abandoned)
        known = await repo.thread_ids(s) if store is not None and roots is None else set()
    if store is not None and roots is None:
        for thread_id in sorted(checkpointed - known):
            report.problems.append(
                Problem(
                    "orphan_checkpoint",
                    None,
                    thread_id,
                    None,
                    "the checkpointer holds a transcript for a thread with no conversation row",
                )
            )
    return report


def _check_threads(report: CheckReport, family: Family, working: str) -> None:
    root = family.root_thread_id
    if root not in family.threads:
        report.problems.append(
            Problem("lineage", root, root, None, "the family's root thread has no row")
        )
    owned: dict[str, list[int]] = {}
    for node in family.nodes:
        owned.setdefault(node.thread_id, []).append(node.turn)
    for t in family.threads.values():

        def problem(kind: str, node: str | None, reason: str, thread_id: str = t.thread_id) -> None:
            report.problems.append(Problem(kind, root, thread_id, node, reason))

        if t.parent_thread_id is not None and t.parent_thread_id not in family.threads:
            problem("lineage", None, f"its parent thread {t.parent_thread_id} is not in the family")
        first, clock = family.first_owned(t.thread_id), t.turn_index
        if clock < first - 1:
            problem("clock", None, f"the clock ({clock}) is behind its branch point ({first - 1})")
        report.nodes += max(0, clock - first + 1)
        turns = sorted(owned.get(t.thread_id, []))
        for k in turns:
            if k > clock:
                report.nodes += 1
                problem("clock", f"{t.thread_id}:{k}", f"node beyond the thread's clock ({clock})")
            elif k < first:
                report.nodes += 1
                problem("clock", f"{t.thread_id}:{k}", "node at or before the branch point")
        kept = [k for k in turns if first <= k <= clock]
        last = max(kept, default=first - 1)
        for k in sorted(set(range(first, last + 1)) - set(kept)):
            problem(
                "missing_snapshot",
                f"{t.thread_id}:{k}",
                f"no workspace snapshot, while the thread's later node {t.thread_id}:{last} "
                "has one (a gap)",
            )
        if last < clock and t.thread_id == working:
            # Pruning keeps the working thread's path whole: its clock is its tip.
            problem(
                "clock",
                f"{t.thread_id}:{last + 1}",
                f"the working thread's clock is at {clock} but its last node is turn {last}",
            )
        elif last < clock:
            _check_tail(report, family, t.thread_id, last, clock)


def _check_tail(report: CheckReport, family: Family, thread_id: str, last: int, clock: int) -> None:
    """Turns `last+1..clock` have no record (a pruned tail): their predecessor must be
    restorable (see the module doc)."""
    if last >= family.first_owned(thread_id):
        return  # the last kept node: restored from the thread's live rows
    anchor = family.branch_point_node(thread_id)
    if anchor is None or anchor in family.nodes:
        return  # the baseline, or a retained branch point
    report.problems.append(
        Problem(
            "missing_snapshot",
            family.root_thread_id,
            thread_id,
            f"{thread_id}:{last + 1}",
            f"turns {last + 1}..{clock} have no snapshot and no restorable predecessor "
            f"(the branch point {anchor} is not a retained node)",
        )
    )


def _check_head(
    report: CheckReport, family: Family, head: ChatHead | None, active: ActiveTurn | None
) -> None:
    root = family.root_thread_id
    if active is not None:
        running = NodeId.format(active.thread_id, active.turn_index)
        report.in_progress.append(
            InProgress("running_turn", root, active.thread_id, running, "a turn is running")
        )
    for t in family.threads.values():
        working = head is not None and head.working_thread_id == t.thread_id
        if t.status == BranchStatus.DRAFT and not working:
            report.problems.append(
                Problem("orphan_draft", root, t.thread_id, None, "a draft, not the working thread")
            )
    if head is None:
        return  # no durable head yet: the head is the root's tip, by definition

    def problem(reason: str, kind: str = "head") -> None:
        report.problems.append(
            Problem(kind, root, head.working_thread_id, head.head_turn_id, reason)
        )

    if head.working_thread_id not in family.threads:
        problem("the working thread is not a thread of this family")
        return
    if head.head_turn_id is not None:
        node = NodeId.parse(head.head_turn_id)
        if node is None or node not in family.nodes:
            problem("the head is not a retained node of this family")
            return
    tip = family.tip(head.working_thread_id)
    expected = str(tip) if tip is not None else None
    if active is not None and NodeId(active.thread_id, active.turn_index) == tip:
        expected = active.parent_turn_id  # the head moves onto the turn when it ends
    if head.head_turn_id != expected:
        problem(f"the head is not the working thread's tip ({expected or 'the baseline'})")


def _check_building(
    report: CheckReport, family: Family, half_built: dict[str, str], abandoned: set[str]
) -> None:
    root = family.root_thread_id
    for thread_id in family.threads:
        what = half_built.get(thread_id)
        if what is None:
            continue
        if thread_id in abandoned:
            report.problems.append(
                Problem(
                    "half_built",
                    root,
                    thread_id,
                    None,
                    f"a {what} older than the janitor's age: abandoned (the janitor reclaims it)",
                )
            )
        else:
            report.in_progress.append(
                InProgress("half_built", root, thread_id, None, f"a {what} being built")
            )
