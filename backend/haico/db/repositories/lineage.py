"""A thread's lineage: the thread and its ancestors (branch parents), nearest first.

Queries only, cached per transaction (parent links never change)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, cast

from sqlalchemy import ColumnElement, Select, String, and_, any_, bindparam, exists, select, true
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from haico.db.models import (
    ActiveTurn,
    Artifact,
    ChatHead,
    Conversation,
    ConversationBranch,
    WorkspaceSnapshot,
)
from haico.db.repositories.heads import THREAD_HEAD_AND_TURN, as_of_lock
from haico.db.repositories.merge import MergeRecord
from haico.db.repositories.threads import LINEAGE_CACHE, LineageEntry

_conv = Conversation.__table__
_branch = ConversationBranch.__table__
_snap = WorkspaceSnapshot.__table__
_artifact = Artifact.__table__


async def lineage(s: AsyncSession, thread_id: str) -> list[LineageEntry]:
    """The thread and its ancestors, nearest first, in one recursive query.

    UNION (not UNION ALL) makes the walk cycle-safe; order is rebuilt by following
    parent links, so there is no depth cap. Parent links never change, so a
    transaction reuses a walk it already made, for the thread and for its ancestors.
    """
    await lineages(s, (thread_id,))
    return _lineage_cache(s)[thread_id]


async def lineages(s: AsyncSession, thread_ids: Iterable[str]) -> None:
    """Walk several threads up at once (one query for those the transaction has not
    walked yet), for `lineage` to answer."""
    cache = _lineage_cache(s)
    wanted = [t for t in dict.fromkeys(thread_ids) if t not in cache]
    if not wanted:
        return
    if len(wanted) == 1:
        rows = (await s.execute(_LINEAGE, {"thread_id": wanted[0]})).all()
    else:
        rows = (await s.execute(_LINEAGES, {"thread_ids": wanted})).all()
    by_child = {r.thread_id: r for r in rows}
    for thread_id in wanted:
        walk = _walk(by_child, thread_id)
        # Each ancestor's own lineage is the rest of the walk from it.
        for n, entry in enumerate(walk):
            cache.setdefault(entry.thread_id, walk[n:])
        cache[thread_id] = walk


@dataclass
class Loaded:
    """What `load_lineages` read: every thread of the walks with its branch row, by
    thread, and their merge and pick nodes."""

    threads: dict[str, tuple[Conversation, ConversationBranch | None]]
    merges: list[MergeRecord]
    # The threads that have no artifact (at the time of the read).
    bare: set[str]


async def load_lineages(s: AsyncSession, thread_ids: Iterable[str]) -> Loaded:
    """`lineages`, in a query that also loads every thread of the walks with its branch
    row into the session (so `get_thread` answers them without a query), their merge
    records, and which of them have no artifact. For an operation that reads several
    threads of one family."""
    wanted = list(dict.fromkeys(thread_ids))
    return _loaded(s, wanted, (await s.execute(_LOADED, {"thread_ids": wanted})).all())


async def lock_with_lineages(
    s: AsyncSession, thread_id: str, thread_ids: Iterable[str]
) -> (
    tuple[Conversation, ConversationBranch | None, ChatHead, ActiveTurn | None, Loaded | None]
    | None
):
    """PostgreSQL: `heads.lock_with_head_and_turn` and `load_lineages(thread_ids)` in
    one statement. The walks are as of the statement's snapshot: when the locked head
    row is not the version that snapshot saw (the lock waited for a change of the
    family), they may be out of date and are not used (None: the caller walks again),
    as the active turn is read again. None if the thread is unknown or its family has
    no head row yet."""
    wanted = list(dict.fromkeys(thread_ids))
    rows = (await s.execute(_LOCK_WITH_LINEAGES, {"thread": thread_id, "thread_ids": wanted})).all()
    if not rows:
        return None
    conv, branch, head, active, waited = await as_of_lock(s, rows[0])
    if waited:
        return conv, branch, head, active, None
    walked = [row[5:] for row in rows if row[5] is not None]
    return conv, branch, head, active, _loaded(s, wanted, walked)


def _loaded(s: AsyncSession, wanted: list[str], rows: Iterable[Sequence[Any]]) -> Loaded:
    """`Loaded` from rows of (thread, branch row, has artifacts, merge node's turn,
    kind, source), and the walks of `wanted` in the transaction's cache."""
    result = Loaded({}, [], set())
    for conv, branch, has_artifacts, turn, kind, merged_from in rows:
        result.threads[conv.thread_id] = (conv, branch)
        if not has_artifacts:
            result.bare.add(conv.thread_id)
        if merged_from is not None:
            result.merges.append(MergeRecord(conv.thread_id, turn, kind, merged_from))
    loaded = result.threads
    by_child = {
        t: _Link(
            t,
            branch.parent_thread_id if branch is not None else None,
            branch.branch_point_turn if branch is not None else None,
            conv.forked_from_turn,
            conv.forked_from_thread_id,
        )
        for t, (conv, branch) in loaded.items()
    }
    cache = _lineage_cache(s)
    for thread_id in wanted:
        walk = _walk(by_child, thread_id)
        for n, entry in enumerate(walk):
            cache.setdefault(entry.thread_id, walk[n:])
        cache[thread_id] = walk
    return result


class _Link(NamedTuple):
    thread_id: str
    parent_thread_id: str | None
    branch_point_turn: int | None
    forked_from_turn: int | None
    forked_from_thread_id: str | None


def _lineage_cache(s: AsyncSession) -> dict[str, list[LineageEntry]]:
    cache: dict[str, list[LineageEntry]] = s.info.setdefault(LINEAGE_CACHE, {})
    return cache


def _walk_up(start: ColumnElement[bool]) -> Any:
    """The recursive walk up from the threads `start` picks: one row per thread."""
    joined = _conv.outerjoin(_branch, _branch.c.thread_id == _conv.c.thread_id)
    cols = (
        _conv.c.thread_id,
        _branch.c.parent_thread_id,
        _branch.c.branch_point_turn,
        _conv.c.forked_from_turn,
        _conv.c.forked_from_thread_id,
    )
    up = select(*cols).select_from(joined).where(start)
    cte = up.cte("lineage", recursive=True)
    step = select(*cols).select_from(joined).join(cte, _conv.c.thread_id == cte.c.parent_thread_id)
    return cte.union(step)


def _lineage_query(*, several: bool = False, rows: bool = False) -> Select[Any]:
    start = (
        _conv.c.thread_id.in_(bindparam("thread_ids", expanding=True))
        if several
        else _conv.c.thread_id == bindparam("thread_id")
    )
    walked = _walk_up(start)
    if not rows:
        return select(walked)
    # A thread's merge nodes are a few rows: one row per thread and merge node.
    merges = _snap.alias("merges")
    loaded = (
        select(
            Conversation,
            ConversationBranch,
            exists().where(_artifact.c.thread_id == Conversation.thread_id).label("artifacts"),
            merges.c.turn_index,
            merges.c.kind,
            merges.c.merged_from,
        )
        .join(walked, walked.c.thread_id == Conversation.thread_id)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .outerjoin(
            merges,
            and_(merges.c.thread_id == Conversation.thread_id, merges.c.merged_from.is_not(None)),
        )
    )
    return cast(Select[Any], loaded)


# Built once: building and keying this statement on every call cost about 1 ms.
_LINEAGE = _lineage_query()
_LINEAGES = _lineage_query(several=True)
_LOADED = _lineage_query(several=True, rows=True)


def _lock_with_lineages() -> Select[Any]:
    """`heads.THREAD_HEAD_AND_TURN` locked as a merge locks it, with a row for each
    thread of the walks up from `thread_ids` (an array: PostgreSQL) and each merge
    node of those threads, as `_LOADED` has them."""
    walked = _walk_up(_conv.c.thread_id == any_(bindparam("thread_ids", type_=ARRAY(String()))))
    lc = aliased(Conversation, name="lc")
    lb = aliased(ConversationBranch, name="lb")
    merges = _snap.alias("lm")
    return cast(
        Select[Any],
        THREAD_HEAD_AND_TURN.add_columns(
            lc,
            lb,
            exists().where(_artifact.c.thread_id == lc.thread_id).label("artifacts"),
            merges.c.turn_index,
            merges.c.kind,
            merges.c.merged_from,
        )
        .outerjoin(walked, true())
        .outerjoin(lc, lc.thread_id == walked.c.thread_id)
        .outerjoin(lb, lb.thread_id == lc.thread_id)
        .outerjoin(
            merges, and_(merges.c.thread_id == lc.thread_id, merges.c.merged_from.is_not(None))
        )
        .with_for_update(of=[Conversation, ChatHead]),
    )


_LOCK_WITH_LINEAGES = _lock_with_lineages()


def _walk(by_child: dict[str, Any], thread_id: str) -> list[LineageEntry]:
    out: list[LineageEntry] = []
    current: str | None = thread_id
    seen: set[str] = set()
    while current is not None and current not in seen and current in by_child:
        seen.add(current)
        r = by_child[current]
        out.append(
            LineageEntry(
                current,
                r.parent_thread_id,
                r.branch_point_turn,
                r.forked_from_turn,
                r.forked_from_thread_id,
            )
        )
        current = r.parent_thread_id
    return out or [LineageEntry(thread_id, None, None, None)]
