"""A family's head row and its active turn (the lease of the turn that runs).

Queries and writes only; services own the rules and the transaction boundaries.

One piece on purpose: the head row and the active turn are locked and read together
(`lock_with_head_and_turn`), so their queries stay side by side.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from sqlalchemy import bindparam, delete, insert, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlalchemy.orm.attributes import set_committed_value

from haico.db.base import table_of
from haico.db.dialect import Write, dialect_of, guard
from haico.db.driver import Driver, entity, labelled
from haico.db.models import ActiveTurn, ChatHead, Conversation, ConversationBranch
from haico.db.repositories.live import LIVE_JSON, LiveRows, live_rows_of
from haico.db.repositories.threads import ROW_VERSION
from haico.domain import now

_head_t = table_of(ChatHead)
_lease_t = table_of(ActiveTurn)


class LockNotAvailable(Exception):
    """Another transaction holds the row lock asked for with NOWAIT."""


# ---- heads ----


async def insert_head_if_missing(
    s: AsyncSession, *, root_thread_id: str, head_turn_id: str | None
) -> None:
    insert = dialect_of(s).insert(ChatHead)
    await s.execute(
        insert.values(
            root_thread_id=root_thread_id,
            head_turn_id=head_turn_id,
            working_thread_id=root_thread_id,
            version=0,
            updated_at=now(),
        ).on_conflict_do_nothing(index_elements=["root_thread_id"])
    )


async def get_head(s: AsyncSession, root_thread_id: str) -> ChatHead | None:
    return await s.get(ChatHead, root_thread_id)


async def lock_head_row(s: AsyncSession, root_thread_id: str, *, nowait: bool) -> ChatHead | None:
    """The head row locked for this transaction; `LockNotAvailable` if NOWAIT fails."""
    stmt = (
        select(ChatHead)
        .where(ChatHead.root_thread_id == root_thread_id)
        .with_for_update(nowait=nowait)
        .execution_options(populate_existing=True)
    )
    try:
        return (await s.execute(stmt)).scalar_one_or_none()
    except DBAPIError as exc:
        if "lock" in str(exc).lower():
            raise LockNotAvailable(str(exc)) from exc
        raise


# A family's head row and its active turn as of one moment: one statement, so one
# snapshot. At READ COMMITTED (PostgreSQL) two reads would straddle a turn's close,
# which moves the head and drops the lease in one commit: the head read before it and
# the lease read after would show the turn gone with the head not moved onto it.
_HEAD_AND_TURN = (
    select(ChatHead, ActiveTurn)
    .outerjoin(ActiveTurn, ActiveTurn.root_thread_id == ChatHead.root_thread_id)
    .where(ChatHead.root_thread_id == bindparam("root"))
    .execution_options(populate_existing=True)
)


async def head_and_active_turn(
    s: AsyncSession, root_thread_id: str
) -> tuple[ChatHead, ActiveTurn | None] | None:
    """The family's head row and its active turn, unlocked, read together (see
    above); None if the family has no head row yet."""
    row = (await s.execute(_HEAD_AND_TURN, {"root": root_thread_id})).first()
    return None if row is None else (row[0], row[1])


# A thread with its branch row and its family's head row, the thread and the head
# locked: the first read of a send. An inner join to the head (FOR UPDATE cannot lock
# the nullable side of an outer join): a family whose head row does not exist yet
# returns nothing here.
_LOCK_WITH_HEAD = (
    select(Conversation, ConversationBranch, ChatHead)
    .join(ChatHead, ChatHead.root_thread_id == Conversation.root_thread_id)
    .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
    .where(Conversation.thread_id == bindparam("thread"))
    .with_for_update(of=[Conversation, ChatHead])
    .execution_options(populate_existing=True)
)


async def lock_with_head(
    s: AsyncSession, thread_id: str
) -> tuple[Conversation, ConversationBranch | None, ChatHead] | None:
    """The thread, its branch row and its family's head row, thread and head locked
    (waiting); None if the thread is unknown or its family has no head row yet."""
    row = (await s.execute(_LOCK_WITH_HEAD, {"thread": thread_id})).first()
    return None if row is None else (row[0], row[1], row[2])


# The optimistic open of a turn reads without locks, in one statement, on the driver
# (`haico.db.driver`): the thread, its branch row, its family's head row (each model's
# columns under its own prefix), the thread row's version (`threads.ROW_VERSION`) and
# the thread's live workspace (`live.LIVE_JSON`), all as of one moment.
_READ_WITH_HEAD = (
    select(
        *labelled(Conversation, "c_"),
        *labelled(ConversationBranch, "b_"),
        *labelled(ChatHead, "h_"),
        ROW_VERSION.label("version"),
        LIVE_JSON.label("live"),
    )
    .join_from(Conversation, ChatHead, ChatHead.root_thread_id == Conversation.root_thread_id)
    .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
    .where(Conversation.thread_id == bindparam("thread"))
)


async def read_with_head(
    d: Driver, thread_id: str
) -> tuple[Conversation, ConversationBranch | None, ChatHead, int, LiveRows] | None:
    """The thread, its branch row, its family's head row, the thread row's version and
    its live workspace, unlocked (PostgreSQL); None as `lock_with_head`."""
    rows = await d.fetch(_READ_WITH_HEAD, {"thread": thread_id})
    if not rows:
        return None
    row = rows[0]
    conv = entity(Conversation, row, "c_")
    head = entity(ChatHead, row, "h_")
    assert conv is not None and head is not None
    live = row["live"]
    return (
        conv,
        entity(ConversationBranch, row, "b_"),
        head,
        row["version"],
        live_rows_of(json.loads(live) if isinstance(live, str) else live),
    )


_TURN_OPENED = guard(
    update(_head_t)
    .where(
        _head_t.c.root_thread_id == bindparam("to_root"),
        _head_t.c.version == bindparam("to_version"),
        _head_t.c.working_thread_id == bindparam("to_working"),
    )
    .values(version=_head_t.c.version + 1)
)


def turn_opened(head: ChatHead) -> Write:
    """A turn opens on the head's working thread: the history state changes (it has an
    active turn), so the version goes up; and, as a guard (`dialect.guard`), the head
    row still is the version read. The loaded `head` takes the new version.

    Every lease is taken with this write, so a reader whose locked head row is the
    version its statement's snapshot saw knows that no lease was taken in between
    (`lock_thread_head_and_turn`)."""
    write = (
        _TURN_OPENED,
        {
            "to_root": head.root_thread_id,
            "to_version": head.version,
            "to_working": head.working_thread_id,
        },
    )
    set_committed_value(head, "version", head.version + 1)
    return write


# The checkout's first read: a thread with its branch row, its family's head row
# locked NOWAIT, the family's active turn, and the head's version as this statement's
# snapshot saw it. Inner join to the head, as above. The joined active turn is as of
# the snapshot: a lease committed after it but before the lock would be missing, with
# nothing to say so, except that every lease is taken with a bump of the head's
# version (`turn_opened`). So when the locked row's version is not the snapshot's,
# the active turn is read again (`lock_thread_head_and_turn`).
_head_seen = aliased(ChatHead)
THREAD_HEAD_AND_TURN = (
    select(
        Conversation,
        ConversationBranch,
        ChatHead,
        ActiveTurn,
        select(_head_seen.version)
        .where(_head_seen.root_thread_id == Conversation.root_thread_id)
        .scalar_subquery(),
    )
    .join(ChatHead, ChatHead.root_thread_id == Conversation.root_thread_id)
    .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
    .outerjoin(ActiveTurn, ActiveTurn.root_thread_id == ChatHead.root_thread_id)
    .where(Conversation.thread_id == bindparam("thread"))
    .execution_options(populate_existing=True)
)
_LOCKTHREAD_HEAD_AND_TURN = THREAD_HEAD_AND_TURN.with_for_update(nowait=True, of=ChatHead)
# The same, waiting for the locks, with the thread's row locked too (a merge: as
# `_LOCK_WITH_HEAD`), and the same check of the active turn against the version.
_LOCK_WITH_HEAD_AND_TURN = THREAD_HEAD_AND_TURN.with_for_update(of=[Conversation, ChatHead])


async def lock_thread_head_and_turn(
    s: AsyncSession, thread_id: str
) -> tuple[Conversation, ConversationBranch | None, ChatHead, ActiveTurn | None] | None:
    """The thread, its branch row, its family's head row locked NOWAIT and the family's
    active turn as of the lock (see above); None if the thread is unknown or its family
    has no head row yet; `LockNotAvailable` if the head row is locked."""
    try:
        return await _with_turn(s, _LOCKTHREAD_HEAD_AND_TURN, thread_id)
    except DBAPIError as exc:
        if "lock" in str(exc).lower():
            raise LockNotAvailable(str(exc)) from exc
        raise


async def lock_with_head_and_turn(
    s: AsyncSession, thread_id: str
) -> tuple[Conversation, ConversationBranch | None, ChatHead, ActiveTurn | None] | None:
    """`lock_with_head` with the family's active turn as of the locks (see
    `lock_thread_head_and_turn`); None if the thread is unknown or its family has no
    head row yet."""
    return await _with_turn(s, _LOCK_WITH_HEAD_AND_TURN, thread_id)


async def _with_turn(
    s: AsyncSession, statement: Any, thread_id: str
) -> tuple[Conversation, ConversationBranch | None, ChatHead, ActiveTurn | None] | None:
    row = (await s.execute(statement, {"thread": thread_id})).first()
    if row is None:
        return None
    conv, branch, head, active, _ = await as_of_lock(s, row)
    return conv, branch, head, active


async def as_of_lock(
    s: AsyncSession, row: Sequence[Any]
) -> tuple[Conversation, ConversationBranch | None, ChatHead, ActiveTurn | None, bool]:
    """A `THREAD_HEAD_AND_TURN` row read with its locks (the first five columns), the
    active turn read again when the lock waited for a change of the family (the locked
    head row is not the version the statement's snapshot saw); and whether it did."""
    conv, branch, head, active, seen = row[:5]
    waited = head.version != seen
    if waited:
        active = await get_active_turn(s, head.root_thread_id, fresh=True)
    return conv, branch, head, active, waited


async def advance_head_if_working(
    s: AsyncSession, *, root_thread_id: str, working_thread_id: str, head_turn_id: str
) -> None:
    await s.execute(
        *head_advance(
            root_thread_id=root_thread_id,
            working_thread_id=working_thread_id,
            head_turn_id=head_turn_id,
        )
    )


_HEAD_ADVANCE = (
    update(_head_t)
    .where(
        _head_t.c.root_thread_id == bindparam("ha_root"),
        _head_t.c.working_thread_id == bindparam("ha_working"),
    )
    .values(
        head_turn_id=bindparam("ha_turn"),
        version=_head_t.c.version + 1,
        updated_at=bindparam("ha_at"),
    )
)


def head_advance(*, root_thread_id: str, working_thread_id: str, head_turn_id: str) -> Write:
    """Move the head onto a node of the working thread, if it still is the working one."""
    return _HEAD_ADVANCE, {
        "ha_root": root_thread_id,
        "ha_working": working_thread_id,
        "ha_turn": head_turn_id,
        "ha_at": now(),
    }


_HEAD_MOVE = (
    update(_head_t)
    .where(_head_t.c.root_thread_id == bindparam("hm_root"))
    .values(
        head_turn_id=bindparam("hm_turn"),
        working_thread_id=bindparam("hm_working"),
        version=bindparam("hm_version"),
        updated_at=bindparam("hm_at"),
    )
)


def head_move(head: ChatHead, *, head_turn_id: str | None, working_thread_id: str) -> Write:
    """Point a head row this transaction has locked at a node and a working thread, as
    a write for `execute_all`; the loaded `head` takes the new values once it ran
    (`moved`)."""
    return _HEAD_MOVE, {
        "hm_root": head.root_thread_id,
        "hm_turn": head_turn_id,
        "hm_working": working_thread_id,
        "hm_version": head.version + 1,
        "hm_at": now(),
    }


def moved(head: ChatHead, write: Write) -> None:
    """Give the loaded head row the values `head_move`'s write stored (as loaded, so
    that no flush writes them again)."""
    params = write[1]
    for attr, name in (
        ("head_turn_id", "hm_turn"),
        ("working_thread_id", "hm_working"),
        ("version", "hm_version"),
        ("updated_at", "hm_at"),
    ):
        set_committed_value(head, attr, params[name])


# ---- active turns ----


async def get_active_turn(
    s: AsyncSession, root_thread_id: str, *, fresh: bool = False
) -> ActiveTurn | None:
    """The family's active turn; `fresh` reads it again even if the session holds it."""
    return await s.get(ActiveTurn, root_thread_id, populate_existing=fresh)


async def all_active_turns(s: AsyncSession) -> Sequence[ActiveTurn]:
    return (await s.execute(select(ActiveTurn))).scalars().all()


_LEASE_TAKE = insert(_lease_t).values(
    root_thread_id=bindparam("lt_root"),
    thread_id=bindparam("lt_thread"),
    turn_index=bindparam("lt_turn"),
    parent_turn_id=bindparam("lt_parent"),
    user_message=bindparam("lt_message"),
    process_id=bindparam("lt_process"),
    cancel_requested=False,
    started_at=bindparam("lt_at"),
    heartbeat_at=bindparam("lt_at"),
)


def lease_take(
    *,
    root_thread_id: str,
    thread_id: str,
    turn_index: int,
    parent_turn_id: str | None,
    user_message: str,
    process_id: str,
) -> Write:
    """Insert the family's active-turn row (its lease) for turn `turn_index` of
    `thread_id`; a second one fails on the primary key."""
    return _LEASE_TAKE, {
        "lt_root": root_thread_id,
        "lt_thread": thread_id,
        "lt_turn": turn_index,
        "lt_parent": parent_turn_id,
        "lt_message": user_message,
        "lt_process": process_id,
        "lt_at": now(),
    }


_LEASE_RELEASE = delete(_lease_t).where(
    _lease_t.c.root_thread_id == bindparam("lr_root"),
    _lease_t.c.process_id == bindparam("lr_process"),
)


def lease_release(*, root_thread_id: str, process_id: str) -> Write:
    """Drop the family's active-turn row if `process_id` still holds it."""
    return _LEASE_RELEASE, {"lr_root": root_thread_id, "lr_process": process_id}
