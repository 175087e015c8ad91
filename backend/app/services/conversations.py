"""Conversations: creation, listing, ownership and rename."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Database
from app.db.models import Conversation, ConversationBranch
from app.db.repositories import shares as shares_repo
from app.db.repositories import threads as repo
from app.domain import NEW_THREAD_ID, BranchStatus, new_thread_id, now
from app.errors import AlreadyExists, InvalidInput, NotFound
from app.events import log as action_log
from app.schemas import ConversationOut, ForkedFrom
from app.services import access
from app.services.access import Role
from app.services.family import Lineage
from app.services.titles import DEFAULT_TITLE, derive


def to_view(
    conv: Conversation, branch: ConversationBranch | None, *, archived: bool | None = None
) -> ConversationOut:
    """`archived`: archived through an ancestor too (default: the thread's own flag)."""
    forked = (
        ForkedFrom(thread_id=conv.forked_from_thread_id, turn_index=conv.forked_from_turn or 0)
        if conv.forked_from_thread_id
        else None
    )
    return ConversationOut(
        thread_id=conv.thread_id,
        root_thread_id=conv.root_thread_id,
        title=conv.title,
        name=conv.name,
        objective=conv.objective,
        turn_index=conv.turn_index,
        message_count=conv.message_count,
        created_at=conv.created_at,
        updated_at=conv.updated_at,
        parent_thread_id=branch.parent_thread_id if branch else None,
        branch_point_turn=branch.branch_point_turn if branch else None,
        reason=branch.reason if branch else None,
        forked_from=forked,
        summary=conv.summary,
        archived=archived if archived is not None else conv.archived_at is not None,
        profile_id=conv.profile_id or "default",
    )


async def get_owned(
    s: AsyncSession,
    *,
    thread_id: str,
    user_id: int,
    for_update: bool = False,
    need: Role = Role.OWNER,
) -> tuple[Conversation, ConversationBranch | None]:
    """The thread if `user_id` may do what `need`s on it — the one access check
    (`services.access`): unknown, deleted or half-built → 404; a stranger, or a role
    below `need` → 403; a revoked or expired share → 401. `need` defaults to the
    owner, so a call that does not say what it needs stays the owner's."""
    found = await shares_repo.thread_with_grants(
        s, thread_id, user_id=user_id, for_update=for_update
    )
    if found is None:
        raise NotFound(f"conversation {thread_id} not found")
    conv, branch, grants = found
    check_visible(conv, branch)
    await access.require(s, conv, user_id=user_id, need=need, grants=grants)
    return conv, branch


async def check_owned(
    s: AsyncSession,
    conv: Conversation,
    branch: ConversationBranch | None,
    *,
    user_id: int,
    need: Role = Role.OWNER,
) -> Role:
    """`get_owned`'s rule on a thread already read; the caller's role."""
    check_visible(conv, branch)
    return await access.require(s, conv, user_id=user_id, need=need)


def check_visible(conv: Conversation, branch: ConversationBranch | None) -> None:
    """404 for a deleted or half-built thread, whoever asks."""
    hidden = conv.building or (branch is not None and branch.status == BranchStatus.PENDING)
    if conv.deleted_at is not None or hidden:
        raise NotFound(f"conversation {conv.thread_id} not found")


async def create(
    db: Database,
    *,
    user_id: int,
    title: str | None = None,
    objective: str | None = None,
    thread_id: str | None = None,
) -> ConversationOut:
    """A new root thread; `thread_id` lets a client choose it (AHP `createSession`, or
    the studio's conversation created on its first send). Without a title it is named
    after its objective (`services.titles`)."""
    thread_id = thread_id or new_thread_id()
    async with db.transaction() as s:
        if await repo.get_thread(s, thread_id) is not None:
            raise AlreadyExists(f"conversation {thread_id} already exists")
        conv = await add_root(
            s, thread_id=thread_id, user_id=user_id, title=title, objective=objective
        )
        return to_view(conv, None)


async def add_root_if_missing(s: AsyncSession, *, thread_id: str, user_id: int) -> bool:
    """A first send's or edit's `?create=true`: the thread as a new root owned by
    `user_id` when no thread has its id, in the caller's transaction, so that a send or
    an edit refused or failed leaves no empty conversation; whether it was created. An
    existing thread (another user's, a deleted one) is left as it is: the caller's
    access check answers for it. A new id must be one the studio makes (as a create's
    `new_id`)."""
    if await repo.get_thread(s, thread_id) is not None:
        return False
    if not NEW_THREAD_ID.fullmatch(thread_id):
        raise InvalidInput(
            f"no conversation {thread_id}; a new one's id is th_ and 32 hexadecimal digits"
        )
    await add_root(s, thread_id=thread_id, user_id=user_id)
    return True


async def add_root(
    s: AsyncSession,
    *,
    thread_id: str,
    user_id: int,
    title: str | None = None,
    objective: str | None = None,
) -> Conversation:
    """Insert a new root thread and its `created` action in the session's transaction
    (`create`, and a first send that creates its conversation: `turn_open`)."""
    conv = Conversation(
        thread_id=thread_id,
        user_id=user_id,
        root_thread_id=thread_id,
        title=(title or "").strip() or derive(objective) or DEFAULT_TITLE,
        objective=objective,
        turn_index=0,
        message_count=0,
        created_at=now(),
        updated_at=now(),
    )
    s.add(conv)
    await s.flush()
    await action_log.append_catalogue(s, thread_id, thread_id, "created")
    return conv


async def list_for_user(
    db: Database, *, user_id: int, archived: bool = False
) -> list[ConversationOut]:
    """The caller's listed threads; archived ones (and what lies below them) only when
    `archived` is true."""
    async with db.read() as s:
        rows = await repo.list_visible_for_user(s, user_id)
    hidden = archived_among(rows)
    return [
        to_view(c, b, archived=c.thread_id in hidden)
        for c, b in rows
        if archived or c.thread_id not in hidden
    ]


def archived_among(rows: list[tuple[Conversation, ConversationBranch | None]]) -> set[str]:
    """The threads of `rows` that are archived, themselves or through an ancestor."""
    parent = {c.thread_id: b.parent_thread_id if b else None for c, b in rows}
    flagged = {c.thread_id for c, _ in rows if c.archived_at is not None}
    out: set[str] = set()
    for thread_id in parent:
        seen: set[str] = set()
        current: str | None = thread_id
        while current is not None and current not in seen:
            if current in flagged:
                out.add(thread_id)
                break
            seen.add(current)
            current = parent.get(current)
    return out


async def is_archived(s: AsyncSession, conv: Conversation) -> bool:
    """Whether the thread, or any thread above it, is archived."""
    if conv.archived_at is not None:
        return True
    lineage = await Lineage.load(s, conv.thread_id)
    return await repo.any_archived(s, [e.thread_id for e in lineage.entries[1:]])


async def get(db: Database, *, user_id: int, thread_id: str) -> ConversationOut:
    async with db.read() as s:
        conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id, need=Role.VIEWER)
        return to_view(conv, branch, archived=await is_archived(s, conv))


async def set_archived(
    db: Database, *, user_id: int, thread_id: str, archived: bool
) -> ConversationOut:
    """Archive (or unarchive) a thread: it and its descendants leave the list and show
    as archived on the graph; no row is deleted, so unarchiving restores the view.

    One statement on the thread's row and one catalogue action, in one transaction:
    on failure nothing changed. Followers see `haico/threadChanged` `archived`.
    """
    async with db.transaction() as s:
        conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id, need=Role.EDITOR)
        if (conv.archived_at is not None) != archived:
            conv.archived_at = now() if archived else None
            await s.flush()
            await action_log.append_catalogue(
                s, conv.root_thread_id, conv.thread_id, "archived", archived=archived
            )
        return to_view(conv, branch, archived=await is_archived(s, conv))


async def rename(
    db: Database,
    *,
    user_id: int,
    thread_id: str,
    title: str | None = None,
    name: str | None = None,
    set_name: bool = False,
) -> ConversationOut:
    """Change the title and/or (with `set_name`) the branch name; a blank name clears it.

    Followers of the family see it as `haico/threadChanged` `renamed`.
    """
    async with db.transaction() as s:
        conv, branch = await get_owned(s, thread_id=thread_id, user_id=user_id, need=Role.EDITOR)
        if title is not None:
            conv.title = title.strip() or conv.title
        if set_name:
            conv.name = (name or "").strip() or None
        conv.updated_at = now()
        await s.flush()
        await action_log.append_catalogue(
            s, conv.root_thread_id, conv.thread_id, "renamed", title=conv.title, name=conv.name
        )
        return to_view(conv, branch, archived=await is_archived(s, conv))
