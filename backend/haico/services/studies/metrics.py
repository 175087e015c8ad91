"""What each participant did, and the figures per condition, from the rows the study's
set-based queries return (`db.repositories.study_reports`); no query of its own.

The counts, per participant's family:

- `turns`: completed turns, except the steps a what-if replay ran on its branches;
- `branches`: the family's threads beyond its root that became real branches (a send
  from a restored node, a branch made by hand, a replay's branch), deleted ones too;
- `restores`: checkouts to a node that was not the head at the time, read from the
  action log's head moves in order (a checkout, or the end of a turn, which advances
  the head onto it); the checkout a what-if replay makes onto each branch it builds
  is the replay's, not counted. The log keeps `HAICO_EVENT_LOG_WINDOW_DAYS`: a study
  that runs longer loses the restores older than that window;
- `merges`: merge nodes;
- `alternatives`: the branches what-if replays built.

`time_on_task_s` runs from consent (or the join, when no consent was asked) to the
finish (or the latest activity, while the participant has not finished).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from haico.domain import aware
from haico.schemas.study_reports import ConditionMetrics, ParticipantRow, Stat, StudyMetrics
from haico.services.studies import features

CHECKOUT = "chat/historyCheckedOut"


@dataclass
class Family:
    """What one participant's family holds, summed from its threads' rows."""

    turns: int = 0
    branches: int = 0
    merges: int = 0
    alternatives: int = 0
    restores: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    last_node: datetime | None = None
    replayed: set[str] = field(default_factory=set)


def _latest(*stamps: datetime | None) -> datetime | None:
    known = [aware(t) for t in stamps if t is not None]
    return max(known) if known else None


def families(
    threads: Iterable[Any],
    tokens: Iterable[Any],
    replays: Iterable[Any],
    moves: Iterable[Any],
) -> dict[str, Family]:
    """Each family's counts (by root) from the study's thread, token, replay and
    head-move rows."""
    out: dict[str, Family] = {}
    for root, thread_ids in replays:
        fam = out.setdefault(root, Family())
        built = [str(t) for t in thread_ids or []]
        fam.alternatives += len(built)
        fam.replayed.update(built)
    for row in threads:
        fam = out.setdefault(row.root_thread_id, Family())
        if row.status == "active":
            fam.branches += 1
        fam.merges += int(row.merges)
        if row.thread_id not in fam.replayed:
            fam.turns += int(row.turns)
        fam.last_node = _latest(fam.last_node, row.last_captured, row.last_completed)
    for root, given, made in tokens:
        fam = out.setdefault(root, Family())
        fam.input_tokens, fam.output_tokens = int(given), int(made)
    by_family: dict[str, list[dict[str, Any]]] = {}
    for root, action in moves:
        by_family.setdefault(root, []).append(action)
    for root, actions in by_family.items():
        out.setdefault(root, Family()).restores = _restores(actions, out[root].replayed)
    return out


def _thread_of(action: dict[str, Any]) -> str | None:
    turn = action.get("turnId")
    return turn.rsplit(":", 1)[0] if isinstance(turn, str) else None


def _restores(actions: list[dict[str, Any]], replayed: set[str]) -> int:
    """Checkouts to a node that was not the head, from a family's head moves in log
    order. A replay checks out each branch it builds before running its steps there
    (the next move is the end of a step on that branch): that checkout is the
    replay's, not the participant's, and is not counted; the head still moves."""
    head: str | None = None
    count = 0
    for i, action in enumerate(actions):
        if action.get("type") != CHECKOUT:
            head = action.get("turnId", head)
            continue
        target = action.get("headTurnId")
        following = actions[i + 1] if i + 1 < len(actions) else {}
        by_replay = following.get("type") != CHECKOUT and _thread_of(following) in replayed
        if target != head and not by_replay:
            count += 1
        head = target
    return count


@dataclass(frozen=True)
class Participant:
    """One row of the participants table, with what the metrics need beyond it."""

    row: ParticipantRow
    finished: bool
    time_on_task_s: float
    input_tokens: int
    output_tokens: int


def participants(rows: Iterable[Any], counts: dict[str, Family]) -> list[Participant]:
    """The participants table from the participant rows (join order) and the counts."""
    out = []
    for p in rows:
        fam = counts.get(p.thread_id, Family())
        last = _latest(p.joined_at, p.consented_at, p.finished_at, p.last_active_at, fam.last_node)
        assert last is not None  # joined_at is never null
        start = aware(p.consented_at or p.joined_at)
        end = aware(p.finished_at) if p.finished_at is not None else last
        row = ParticipantRow(
            participant=features.label(p.number),
            condition=p.condition,
            thread_id=p.thread_id,
            state=p.state,
            joined_at=aware(p.joined_at),
            last_active_at=last,
            turns=fam.turns,
            branches=fam.branches,
            restores=fam.restores,
            merges=fam.merges,
            alternatives=fam.alternatives,
        )
        out.append(
            Participant(
                row=row,
                finished=p.state == "finished",
                time_on_task_s=max(0.0, (end - start).total_seconds()),
                input_tokens=fam.input_tokens,
                output_tokens=fam.output_tokens,
            )
        )
    return out


def stat(values: Sequence[float]) -> Stat:
    if not values:
        return Stat(mean=None, median=None)
    return Stat(mean=statistics.fmean(values), median=float(statistics.median(values)))


def metrics(conditions: Iterable[Any], people: Sequence[Participant]) -> StudyMetrics:
    """Mean and median of every count per condition, in the study's order (a condition
    nobody was assigned yet is listed with nulls)."""
    out = []
    for cond in conditions:
        group = [p for p in people if p.row.condition == cond.name]

        def of(pick: Any, group: list[Participant] = group) -> Stat:
            return stat([float(pick(p)) for p in group])

        out.append(
            ConditionMetrics(
                condition=cond.name,
                participants=len(group),
                finished=sum(p.finished for p in group),
                turns=of(lambda p: p.row.turns),
                branches=of(lambda p: p.row.branches),
                restores=of(lambda p: p.row.restores),
                merges=of(lambda p: p.row.merges),
                alternatives=of(lambda p: p.row.alternatives),
                time_on_task_s=of(lambda p: p.time_on_task_s),
                input_tokens=of(lambda p: p.input_tokens),
                output_tokens=of(lambda p: p.output_tokens),
            )
        )
    return StudyMetrics(conditions=out)
