"""The reading side of a study: who may read it, its participants, and what happened in
their families, each as one set-based query over the whole study.

Every query takes the study id and joins through `study_participants`, so its cost
grows with the study's rows, never with a query per participant.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import and_, case, func, literal_column, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import table_of
from haico.db.dialect import dialect_of
from haico.db.models import (
    ActionLogEntry,
    Conversation,
    ConversationBranch,
    Job,
    NodeProvenance,
    StudyCondition,
    StudyParticipant,
    WorkspaceSnapshot,
)

_part = table_of(StudyParticipant)
_cond = table_of(StudyCondition)
_conv = table_of(Conversation)
_branch = table_of(ConversationBranch)
_snap = table_of(WorkspaceSnapshot)
_prov = table_of(NodeProvenance)
_job = table_of(Job)
_log = table_of(ActionLogEntry)

# The family actions that move a family's head: a checkout, and the end of a turn (a
# turn that ends advances the head onto it when it ran on the working thread).
HEAD_MOVES = ("chat/historyCheckedOut", "chat/turnComplete", "chat/turnCancelled", "chat/error")


def _roots(study_id: str) -> Any:
    return select(_part.c.thread_id).where(_part.c.study_id == study_id).scalar_subquery()


async def conditions(s: AsyncSession, study_id: str) -> Sequence[Any]:
    """(id, name) of the study's conditions, in the study's order."""
    stmt = (
        select(_cond.c.id, _cond.c.name)
        .where(_cond.c.study_id == study_id)
        .order_by(_cond.c.position)
    )
    return (await s.execute(stmt)).all()


async def participants(s: AsyncSession, study_id: str) -> Sequence[Any]:
    """The participants in join order, with their condition's name."""
    stmt = (
        select(
            _part.c.number,
            _part.c.condition_id,
            _cond.c.name.label("condition"),
            _part.c.thread_id,
            _part.c.state,
            _part.c.joined_at,
            _part.c.consented_at,
            _part.c.finished_at,
            _part.c.last_active_at,
        )
        .join(_cond, _cond.c.id == _part.c.condition_id)
        .where(_part.c.study_id == study_id)
        .order_by(_part.c.number)
    )
    return (await s.execute(stmt)).all()


async def thread_counts(s: AsyncSession, study_id: str) -> Sequence[Any]:
    """Per thread of the study's families: its root, its branch status (None: a
    root), its completed turns and merge nodes (the turns it owns), and when its
    latest node was made or finished."""
    owned = _snap.c.turn_index > func.coalesce(
        _branch.c.branch_point_turn, _conv.c.forked_from_turn, 0
    )
    turns = case((and_(_snap.c.kind == "turn", _snap.c.state == "complete"), 1), else_=0)
    merges = case((_snap.c.kind == "merge", 1), else_=0)
    stmt = (
        select(
            _conv.c.root_thread_id,
            _conv.c.thread_id,
            _branch.c.status,
            func.coalesce(func.sum(turns), 0).label("turns"),
            func.coalesce(func.sum(merges), 0).label("merges"),
            func.max(_snap.c.captured_at).label("last_captured"),
            func.max(_snap.c.completed_at).label("last_completed"),
        )
        .select_from(_conv)
        .outerjoin(_branch, _branch.c.thread_id == _conv.c.thread_id)
        .outerjoin(_snap, and_(_snap.c.thread_id == _conv.c.thread_id, owned))
        .where(_conv.c.root_thread_id.in_(_roots(study_id)), _conv.c.building.is_(False))
        .group_by(_conv.c.root_thread_id, _conv.c.thread_id, _branch.c.status)
    )
    return (await s.execute(stmt)).all()


async def tokens(s: AsyncSession, study_id: str) -> Sequence[Any]:
    """(root, input tokens, output tokens) summed over each family's nodes."""
    stmt = (
        select(
            _conv.c.root_thread_id,
            func.coalesce(func.sum(_prov.c.input_tokens), 0),
            func.coalesce(func.sum(_prov.c.output_tokens), 0),
        )
        .join(_conv, _conv.c.thread_id == _prov.c.thread_id)
        .where(_conv.c.root_thread_id.in_(_roots(study_id)))
        .group_by(_conv.c.root_thread_id)
    )
    return (await s.execute(stmt)).all()


async def replay_threads(s: AsyncSession, study_id: str) -> Sequence[Any]:
    """(root, thread ids) of every replay job of the study's families: the branches
    each built."""
    stmt = select(_job.c.root_thread_id, _job.c.thread_ids).where(
        _job.c.kind == "replay", _job.c.root_thread_id.in_(_roots(study_id))
    )
    return (await s.execute(stmt)).all()


def _action_type(session: AsyncSession) -> Any:
    if dialect_of(session).is_postgres:
        return literal_column("action_log.action ->> 'type'")
    return func.json_extract(_log.c.action, "$.type")


async def head_moves(s: AsyncSession, study_id: str) -> Sequence[Any]:
    """(root, action) of every head move the log holds of the study's families
    (`HEAD_MOVES`), by family and in log order."""
    kind = _action_type(s)
    stmt = (
        select(_log.c.root_thread_id, _log.c.action)
        .where(_log.c.root_thread_id.in_(_roots(study_id)), kind.in_(HEAD_MOVES))
        .order_by(_log.c.root_thread_id, _log.c.seq)
    )
    return (await s.execute(stmt)).all()


async def study_log_after(
    s: AsyncSession, *, after: int, roots: set[str], channel: str, limit: int = 500
) -> Sequence[Any]:
    """(seq, root, channel, action) of the log entries after `after` of the families
    `roots` or on the study's `channel`, oldest first, at most `limit`."""
    stmt = (
        select(_log.c.seq, _log.c.root_thread_id, _log.c.channel, _log.c.action)
        .where(
            _log.c.seq > after,
            or_(_log.c.root_thread_id.in_(roots), _log.c.channel == channel),
        )
        .order_by(_log.c.seq)
        .limit(limit)
    )
    return (await s.execute(stmt)).all()


async def family_roots(s: AsyncSession, study_id: str) -> list[tuple[int, str, str]]:
    """(number, condition name, root) of every participant's family, in join order."""
    stmt = (
        select(_part.c.number, _cond.c.name, _part.c.thread_id)
        .join(_cond, _cond.c.id == _part.c.condition_id)
        .where(_part.c.study_id == study_id)
        .order_by(_part.c.number)
    )
    return [(int(n), str(c), str(t)) for n, c, t in (await s.execute(stmt)).all()]
