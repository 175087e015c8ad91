"""Conversations: creation, listing, ownership, rename and soft delete."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Database
from app.db.models import Conversation, ConversationBranch, Document
from app.db.repositories import conversations as repo
from app.errors import Forbidden, NotFound, TurnInProgress
from app.events import log as action_log
from app.schemas import ConversationOut, ForkedFrom


def new_thread_id() -> str:
    return "th_" + uuid.uuid4().hex


def now() -> datetime:
    return datetime.now(UTC)


def to_view(conv: Conversation, branch: ConversationBranch | None) -> ConversationOut:
    forked = (
        ForkedFrom(thread_id=conv.forked_from_thread_id, turn_index=conv.forked_from_turn or 0)
        if conv.forked_from_thread_id
        else None
    )
    return ConversationOut(
        thread_id=conv.thread_id,
        root_thread_id=conv.root_thread_id,
        title=conv.title,
        objective=conv.objective,
        turn_index=conv.turn_index,
        message_count=conv.message_count,
        created_at=conv.created_at,
        updated_at=conv.updated_at,
        parent_thread_id=branch.parent_thread_id if branch else None,
        branch_point_turn=branch.branch_point_turn if branch else None,
        reason=branch.reason if branch else None,
        forked_from=forked,
    )


async def get_owned(
    session: AsyncSession, *, thread_id: str, user_id: int, for_update: bool = False
) -> tuple[Conversation, ConversationBranch | None]:
    """The thread if `user_id` owns it: unknown, deleted or half-built → 404, foreign → 403."""
    stmt = (
        select(Conversation, ConversationBranch)
        .outerjoin(ConversationBranch, ConversationBranch.thread_id == Conversation.thread_id)
        .where(Conversation.thread_id == thread_id)
    )
    if for_update:
        stmt = stmt.with_for_update(of=Conversation)
    row = (await session.execute(stmt)).first()
    if row is None:
        raise NotFound(f"conversation {thread_id} not found")
    conv, branch = row
    hidden = conv.building or (branch is not None and branch.status == "pending")
    if conv.deleted_at is not None or hidden:
        raise NotFound(f"conversation {thread_id} not found")
    if conv.user_id != user_id:
        raise Forbidden(f"conversation {thread_id} belongs to another user")
    return conv, branch


async def create(
    db: Database, *, user_id: int, title: str | None = None, objective: str | None = None
) -> ConversationOut:
    thread_id = new_thread_id()
    async with db.transaction() as s:
        conv = Conversation(
            thread_id=thread_id,
            user_id=user_id,
            root_thread_id=thread_id,
            title=(title or "").strip() or "New conversation",
            objective=objective,
            turn_index=0,
            message_count=0,
            created_at=now(),
            updated_at=now(),
        )
        s.add(conv)
        await s.flush()
        await action_log.append_catalogue(s, thread_id, thread_id, "created")
        return to_view(conv, None)


async def list_for_user(db: Database, *, user_id: int) -> list[ConversationOut]:
    async with db.read() as s:
        return [to_view(c, b) for c, b in await repo.list_visible_for_user(s, user_id)]


async def get(db: Database, *, user_id: int, thread_id: str) -> ConversationOut:
    async with db.read() as s:
        return to_view(*await get_owned(s, thread_id=thread_id, user_id=user_id))


async def rename(db: Database, *, user_id: int, thread_id: str, title: str) -> ConversationOut:
    async with db.transaction() as s:
        conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id)
        conv.title = title.strip() or conv.title
        conv.updated_at = now()
        await s.flush()
        await action_log.append_catalogue(
            s, conv.root_thread_id, conv.thread_id, "renamed", title=conv.title
        )
        return to_view(conv, branch)


async def soft_delete(db: Database, *, user_id: int, thread_id: str) -> None:
    """Soft-delete a thread; deleting a family's root deletes the whole family.

    Deleting the family's working thread first moves the head to its branch point (a
    forced checkout in the same transaction), so the family keeps a usable tip.
    """
    from app.services import history

    async with db.transaction() as s:
        conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id)
        root_id = conv.root_thread_id
        if await repo.get_active_turn(s, root_id) is not None:
            raise TurnInProgress("a turn is running in this conversation; wait or cancel it")
        stamp = now()
        if conv.root_thread_id == conv.thread_id:
            await s.execute(
                update(Conversation)
                .where(Conversation.root_thread_id == root_id, Conversation.deleted_at.is_(None))
                .values(deleted_at=stamp)
            )
        else:
            head = await history.lock_head(s, root_id, nowait=False)
            if head.working_thread_id == conv.thread_id and branch is not None:
                try:
                    target = await history.branch_point_target(s, conv, branch, user_id=user_id)
                except NotFound:
                    # The branch point is no longer retained: fall back to the baseline.
                    target = await history.resolve_target(
                        s, root_thread_id=root_id, user_id=user_id, turn_id=None
                    )
                await history.switch_in(s, head, target, force=True, user_id=user_id)
            if branch is not None and branch.status == "draft":
                # A draft has nothing worth keeping once it is not the working thread.
                from app.services.branching import delete_thread_rows

                await delete_thread_rows(s, conv.thread_id)
            else:
                conv.deleted_at = stamp
        await action_log.append_catalogue(s, root_id, conv.thread_id, "deleted")


async def touch(session: AsyncSession, conv: Conversation) -> None:
    """Record that the thread's live workspace changed (drafts become dirty)."""
    conv.updated_at = now()
    await session.execute(
        update(ConversationBranch)
        .where(ConversationBranch.thread_id == conv.thread_id, ConversationBranch.status == "draft")
        .values(dirty=True)
    )


async def ensure_document(session: AsyncSession, thread_id: str) -> Document:
    doc = (
        await session.execute(select(Document).where(Document.thread_id == thread_id))
    ).scalar_one_or_none()
    if doc is None:
        doc = Document(thread_id=thread_id, title="", content="")
        session.add(doc)
        await session.flush()
    return doc
