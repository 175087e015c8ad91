"""Threads: conversations and their branch rows (heads and active turns: `heads`).

Queries and writes only; services own the rules and the transaction boundaries.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    Text,
    and_,
    bindparam,
    case,
    cast,
    delete,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm.attributes import set_committed_value

from haico.db.base import table_of
from haico.db.dialect import Write, guard
from haico.db.models import Conversation, ConversationBranch, WorkspaceSnapshot
from haico.domain import BranchStatus, NodeId, now

_conv = Conversation.__table__
_branch = ConversationBranch.__table__


@dataclass(frozen=True)
class ThreadRow:
    """One thread of a family with its branch row folded in (None fields for a root)."""

    thread_id: str
    title: str
    turn_index: int
    deleted: bool
    created_at: datetime
    updated_at: datetime
    parent_thread_id: str | None
    branch_point_turn: int | None
    reason: str | None
    status: BranchStatus | None
    forked_from_thread_id: str | None
    forked_from_turn: int | None
    name: str | None = None
    summary: str | None = None
    archived: bool = False  # archived itself (its descendants: `Family.archived`)


@dataclass(frozen=True)
class LineageEntry:
    thread_id: str
    parent_thread_id: str | None
    branch_point_turn: int | None  # None for the root
    forked_from_turn: int | None
    forked_from_thread_id: str | None = None


# ---- reads ----


async def get_with_branch(
    s: AsyncSession, thread_id: str, *, for_update: bool = False
) -> tuple[Conversation, ConversationBranch | None] | None:
    stmt = (
        select(Conversation, ConversationBranch)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .where(Conversation.thread_id == thread_id)
    )
    if for_update:
        stmt = stmt.with_for_update(of=Conversation)
    row = (await s.execute(stmt)).first()
    return (row[0], row[1]) if row is not None else None


async def get_thread(s: AsyncSession, thread_id: str) -> Conversation | None:
    return await s.get(Conversation, thread_id)


async def get_branch(s: AsyncSession, thread_id: str) -> ConversationBranch | None:
    return await s.get(ConversationBranch, thread_id)


async def family_threads(s: AsyncSession, root_thread_id: str) -> list[ThreadRow]:
    """Every thread of the family (hidden ones included), in one indexed query."""
    stmt = (
        select(
            _conv.c.thread_id,
            _conv.c.title,
            _conv.c.name,
            _conv.c.summary,
            _conv.c.archived_at,
            _conv.c.turn_index,
            _conv.c.deleted_at,
            _conv.c.created_at,
            _conv.c.updated_at,
            _conv.c.forked_from_thread_id,
            _conv.c.forked_from_turn,
            _branch.c.parent_thread_id,
            _branch.c.branch_point_turn,
            _branch.c.reason,
            _branch.c.status,
        )
        .select_from(_conv.outerjoin(_branch, _branch.c.thread_id == _conv.c.thread_id))
        .where(_conv.c.root_thread_id == root_thread_id)
    )
    return [
        ThreadRow(
            thread_id=r.thread_id,
            title=r.title,
            turn_index=r.turn_index,
            deleted=r.deleted_at is not None,
            created_at=r.created_at,
            updated_at=r.updated_at,
            parent_thread_id=r.parent_thread_id,
            branch_point_turn=r.branch_point_turn,
            reason=r.reason,
            status=BranchStatus(r.status) if r.status is not None else None,
            forked_from_thread_id=r.forked_from_thread_id,
            forked_from_turn=r.forked_from_turn,
            name=r.name,
            summary=r.summary,
            archived=r.archived_at is not None,
        )
        for r in (await s.execute(stmt)).all()
    ]


async def node_keys(s: AsyncSession, thread_ids: list[str]) -> list[tuple[str, int]]:
    """(thread, turn) of every turn record of these threads."""
    rows = await s.execute(
        select(WorkspaceSnapshot.thread_id, WorkspaceSnapshot.turn_index).where(
            WorkspaceSnapshot.thread_id.in_(thread_ids)
        )
    )
    return [(t, k) for t, k in rows.all()]


# A transaction's lineage walks (`lineage.py`), by thread, in the session's info.
LINEAGE_CACHE = "haico_lineage"


def know_lineage(s: AsyncSession, conv: Conversation, branch: ConversationBranch | None) -> None:
    """A thread read with its branch row: when it has none (a family's root), its
    lineage is itself alone, and `lineage` needs no query for it in this transaction."""
    if branch is None and conv.thread_id == conv.root_thread_id:
        cache: dict[str, list[LineageEntry]] = s.info.setdefault(LINEAGE_CACHE, {})
        cache.setdefault(
            conv.thread_id,
            [
                LineageEntry(
                    conv.thread_id, None, None, conv.forked_from_turn, conv.forked_from_thread_id
                )
            ],
        )


def listed() -> ColumnElement[bool]:
    """Which threads a list shows (with `ConversationBranch` outer-joined): roots and
    active branches, never deleted ones, drafts or half-built ones."""
    return and_(
        Conversation.deleted_at.is_(None),
        Conversation.building.is_(False),
        or_(
            ConversationBranch.thread_id.is_(None),
            ConversationBranch.status == BranchStatus.ACTIVE,
        ),
    )


async def list_visible_for_user(
    s: AsyncSession, user_id: int
) -> list[tuple[Conversation, ConversationBranch | None]]:
    """The user's listed threads: roots and active branches, never drafts or half-built."""
    stmt = (
        select(Conversation, ConversationBranch)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .where(Conversation.user_id == user_id, listed())
        .order_by(Conversation.updated_at.desc(), Conversation.thread_id)
    )
    return [(c, b) for c, b in (await s.execute(stmt)).all()]


async def write_summary(s: AsyncSession, thread_id: str, text: str, *, turn: int) -> bool:
    """Store a summary made at turn clock `turn`, unless a newer one is stored already."""
    result = await s.execute(
        update(Conversation)
        .where(
            Conversation.thread_id == thread_id,
            or_(Conversation.summary_turn.is_(None), Conversation.summary_turn < turn),
        )
        .values(summary=text, summary_turn=turn)
        .execution_options(synchronize_session=False)
    )
    return bool(getattr(result, "rowcount", 0))


async def any_archived(s: AsyncSession, thread_ids: list[str]) -> bool:
    """Whether any of these threads is archived."""
    if not thread_ids:
        return False
    stmt = (
        select(Conversation.thread_id)
        .where(Conversation.thread_id.in_(thread_ids), Conversation.archived_at.is_not(None))
        .limit(1)
    )
    return (await s.execute(stmt)).first() is not None


async def fork_references(s: AsyncSession, thread_ids: list[str]) -> list[NodeId]:
    """Nodes of these threads that some fork (a conversation elsewhere) started from."""
    rows = await s.execute(
        select(Conversation.forked_from_thread_id, Conversation.forked_from_turn).where(
            Conversation.forked_from_thread_id.in_(thread_ids)
        )
    )
    return [NodeId(t, k or 0) for t, k in rows.all() if t is not None]


# ---- writes ----


async def set_branch_status(
    s: AsyncSession, thread_id: str, status: BranchStatus, *, only_if: BranchStatus | None = None
) -> None:
    stmt = update(ConversationBranch).where(ConversationBranch.thread_id == thread_id)
    if only_if is not None:
        stmt = stmt.where(ConversationBranch.status == only_if)
    await s.execute(stmt.values(status=status, dirty=False))


async def finish_fork(s: AsyncSession, thread_id: str) -> None:
    await s.execute(
        update(Conversation).where(Conversation.thread_id == thread_id).values(building=False)
    )


async def set_stamps(
    s: AsyncSession, thread_id: str, *, created_at: datetime, updated_at: datetime
) -> None:
    await s.execute(
        update(Conversation)
        .where(Conversation.thread_id == thread_id)
        .values(created_at=created_at, updated_at=updated_at)
    )


async def soft_delete_family(s: AsyncSession, root_thread_id: str, stamp: datetime) -> None:
    await s.execute(
        update(Conversation)
        .where(Conversation.root_thread_id == root_thread_id, Conversation.deleted_at.is_(None))
        .values(deleted_at=stamp)
    )


_conv_t = table_of(Conversation)

_branch_t = table_of(ConversationBranch)

_DRAFT_DIRTY = (
    update(_branch_t)
    .where(
        _branch_t.c.thread_id == bindparam("dd_thread"),
        _branch_t.c.status == BranchStatus.DRAFT,
    )
    .values(dirty=True)
)

_TOUCH = (
    update(_conv_t)
    .where(_conv_t.c.thread_id == bindparam("tc_thread"))
    .values(updated_at=bindparam("tc_at"))
)


def edited(conv: Conversation) -> list[Write]:
    """A live edit of the thread: it was active now (which writes its row), and a draft
    becomes dirty. The loaded `conv` takes the new stamp as if committed."""
    at = now()
    set_committed_value(conv, "updated_at", at)
    return [
        (_TOUCH, {"tc_thread": conv.thread_id, "tc_at": at}),
        (_DRAFT_DIRTY, {"dd_thread": conv.thread_id}),
    ]


_TURN_FINISHED = (
    update(_conv_t)
    .where(_conv_t.c.thread_id == bindparam("tf_thread"))
    .values(message_count=_conv_t.c.message_count + 2, updated_at=bindparam("tf_at"))
)


# The same, and a thread still titled `tf_default` is renamed (one write of the row:
# PostgreSQL runs the close's writes as one statement, where a row updated twice keeps
# only one of the updates).
_TURN_FINISHED_TITLED = _TURN_FINISHED.values(
    title=case(
        (_conv_t.c.title == bindparam("tf_default"), bindparam("tf_title")), else_=_conv_t.c.title
    )
)


def turn_finished(thread_id: str, *, retitle: tuple[str, str] | None = None) -> Write:
    """A turn of the thread ended: two more messages, and the thread was active now;
    with `retitle` (default, title) a thread still titled default gets the title."""
    params = {"tf_thread": thread_id, "tf_at": now()}
    if retitle is None:
        return _TURN_FINISHED, params
    default, title = retitle
    return _TURN_FINISHED_TITLED, {**params, "tf_default": default, "tf_title": title}


async def delete_thread_rows(s: AsyncSession, thread_id: str) -> None:
    """Remove every SQL row that belongs to one thread (compensation and pruning): its
    workspace, snapshots, artifacts, branch row and search entries go with the thread's
    row (their foreign keys are ON DELETE CASCADE; SQLite runs with foreign_keys=ON), in
    one statement."""
    await s.execute(delete(Conversation).where(Conversation.thread_id == thread_id))


_CLOCK_ADVANCE = (
    update(_conv_t)
    .where(_conv_t.c.thread_id == bindparam("ca_thread"))
    .values(turn_index=bindparam("ca_turn"), updated_at=bindparam("ca_at"))
)


# The row version PostgreSQL gives every write of a row (its xmin), as a number: a
# thread read without a lock is unchanged while this still matches. Every change of
# a thread's live workspace writes its thread row (`live_edit.changed`).
ROW_VERSION = cast(cast(literal_column("conversations.xmin"), Text), BigInteger)

_TOUCH_IF_UNCHANGED = guard(
    update(_conv_t)
    .where(
        _conv_t.c.thread_id == bindparam("tc_thread"),
        bindparam("tc_version", type_=BigInteger()) == ROW_VERSION,
    )
    .values(updated_at=bindparam("tc_at"))
)


def edited_if_unchanged(conv: Conversation, row_version: int) -> list[Write]:
    """`edited`, the thread row's write as a guard (`dialect.guard`): the row must
    still be the version `row_version` read without a lock (PostgreSQL)."""
    (_, touch), dirty = edited(conv)
    return [(_TOUCH_IF_UNCHANGED, {**touch, "tc_version": row_version}), dirty]


_CLOCK_ADVANCE_IF_UNCHANGED = guard(
    update(_conv_t)
    .where(
        _conv_t.c.thread_id == bindparam("ca_thread"),
        bindparam("ca_version", type_=BigInteger()) == ROW_VERSION,
    )
    .values(turn_index=bindparam("ca_turn"), updated_at=bindparam("ca_at"))
)


def clock_advance_if_unchanged(conv: Conversation, turn_index: int, row_version: int) -> Write:
    """`clock_advance`, as a guard (`dialect.guard`): only if the thread row still is
    the version read (PostgreSQL)."""
    _, params = clock_advance(conv, turn_index)
    return _CLOCK_ADVANCE_IF_UNCHANGED, {**params, "ca_version": row_version}


def clock_advance(conv: Conversation, turn_index: int) -> Write:
    """Move the thread's turn clock to `turn_index`. The loaded `conv` is updated as
    if this were committed, so the session does not write it again."""
    at = now()
    set_committed_value(conv, "turn_index", turn_index)
    set_committed_value(conv, "updated_at", at)
    return _CLOCK_ADVANCE, {"ca_thread": conv.thread_id, "ca_turn": turn_index, "ca_at": at}
