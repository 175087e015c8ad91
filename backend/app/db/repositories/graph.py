"""Queries behind the history graph of a family. Reads only, and a fixed number of them.

Which threads of a family the graph shows is decided in SQL, by two recursive CTEs
that every query here embeds (so no query depends on the family's size or depth):

- `graph_up`: the requested thread and all its ancestors, whatever their state.
- `graph_down`: a walk down from the root over child branches; a child is entered when
  it is on `graph_up`, or when it is an `active` branch that is not soft-deleted.
  Drafts, pending branches and deleted threads are therefore hidden with their whole
  subtree, except the chain that leads to the requested thread.

Both CTEs use UNION over a single id column, so a corrupt cycle ends the walk instead
of looping, and neither has a depth cap.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import CTE, and_, func, literal, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import Artifact, Conversation, ConversationBranch, WorkspaceSnapshot

_conv = Conversation.__table__
_branch = ConversationBranch.__table__
_snap = WorkspaceSnapshot.__table__
_art = Artifact.__table__


@dataclass(frozen=True)
class ThreadRow:
    thread_id: str
    title: str
    turn_index: int
    deleted: bool
    created_at: datetime
    parent_thread_id: str | None
    branch_point_turn: int | None
    reason: str | None


@dataclass(frozen=True)
class NodeRow:
    thread_id: str
    turn_index: int
    user_message: str
    captured_at: datetime
    state: str


def _visible_threads(*, thread_id: str, root_thread_id: str) -> CTE:
    """The ids of the threads the graph shows (see the module docstring)."""
    up = select(literal(thread_id).label("thread_id")).cte("graph_up", recursive=True)
    up = up.union(
        select(_branch.c.parent_thread_id).join(up, _branch.c.thread_id == up.c.thread_id)
    )
    down = select(literal(root_thread_id).label("thread_id")).cte("graph_down", recursive=True)
    step = (
        select(_branch.c.thread_id)
        .join(down, _branch.c.parent_thread_id == down.c.thread_id)
        .join(_conv, _conv.c.thread_id == _branch.c.thread_id)
        .where(
            _conv.c.root_thread_id == root_thread_id,
            or_(
                _branch.c.thread_id.in_(select(up.c.thread_id)),
                and_(_branch.c.status == "active", _conv.c.deleted_at.is_(None)),
            ),
        )
    )
    return down.union(step)


async def visible_threads(
    session: AsyncSession, *, thread_id: str, root_thread_id: str
) -> list[ThreadRow]:
    """Every thread the graph of `thread_id`'s family shows, with its branch row."""
    down = _visible_threads(thread_id=thread_id, root_thread_id=root_thread_id)
    stmt = select(
        _conv.c.thread_id,
        _conv.c.title,
        _conv.c.turn_index,
        _conv.c.deleted_at,
        _conv.c.created_at,
        _branch.c.parent_thread_id,
        _branch.c.branch_point_turn,
        _branch.c.reason,
    ).select_from(
        down.join(_conv, _conv.c.thread_id == down.c.thread_id).outerjoin(
            _branch, _branch.c.thread_id == _conv.c.thread_id
        )
    )
    return [
        ThreadRow(
            thread_id=r.thread_id,
            title=r.title,
            turn_index=r.turn_index,
            deleted=r.deleted_at is not None,
            created_at=r.created_at,
            parent_thread_id=r.parent_thread_id,
            branch_point_turn=r.branch_point_turn,
            reason=r.reason,
        )
        for r in (await session.execute(stmt)).all()
    ]


async def newest_owned_nodes(
    session: AsyncSession,
    *,
    thread_id: str,
    root_thread_id: str,
    limit: int,
    preview_chars: int,
) -> list[NodeRow]:
    """Turn metadata of the visible threads' owned turns, newest first, at most `limit`.

    A thread owns the turns after its branch point (a root owns them all) up to its
    clock. Only light columns are read: never the snapshot's JSON or document body.
    """
    down = _visible_threads(thread_id=thread_id, root_thread_id=root_thread_id)
    stmt = (
        select(
            _snap.c.thread_id,
            _snap.c.turn_index,
            func.substr(_snap.c.user_message, 1, preview_chars).label("user_message"),
            _snap.c.captured_at,
            _snap.c.state,
        )
        .select_from(
            _snap.join(down, down.c.thread_id == _snap.c.thread_id)
            .join(_conv, _conv.c.thread_id == _snap.c.thread_id)
            .outerjoin(_branch, _branch.c.thread_id == _snap.c.thread_id)
        )
        .where(
            _snap.c.turn_index > func.coalesce(_branch.c.branch_point_turn, 0),
            _snap.c.turn_index <= _conv.c.turn_index,
        )
        .order_by(_snap.c.captured_at.desc(), _snap.c.turn_index.desc(), _snap.c.thread_id.desc())
        .limit(limit)
    )
    return [
        NodeRow(
            thread_id=r.thread_id,
            turn_index=r.turn_index,
            user_message=r.user_message or "",
            captured_at=r.captured_at,
            state=r.state,
        )
        for r in (await session.execute(stmt)).all()
    ]


async def artifact_counts(
    session: AsyncSession, thread_ids: Collection[str]
) -> dict[tuple[str, int], int]:
    """How many artifacts each (thread, turn) of `thread_ids` produced, in one grouped query."""
    ids: Sequence[str] = sorted(thread_ids)
    stmt = (
        select(_art.c.thread_id, _art.c.turn_index, func.count().label("n"))
        .where(_art.c.thread_id.in_(ids))
        .group_by(_art.c.thread_id, _art.c.turn_index)
    )
    return {(r.thread_id, r.turn_index): int(r.n) for r in (await session.execute(stmt)).all()}
