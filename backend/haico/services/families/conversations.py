"""Conversations: creation, listing, ownership and rename."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Conversation, ConversationBranch
from haico.db.repositories import shares as shares_repo
from haico.db.repositories import threads as repo
from haico.domain import NEW_THREAD_ID, BranchStatus, new_thread_id, now
from haico.errors import AlreadyExists, Forbidden, InvalidInput, NotFound, Unauthorized
from haico.events import log as action_log
from haico.schemas.conversations import ConversationOut, ForkedFrom
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.families.model import Lineage
from haico.services.families.titles import DEFAULT_TITLE, derive


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
        reveal_codings=bool(conv.reveal_codings),
    )


async def get_for(
    s: AsyncSession,
    principal: Principal,
    *,
    thread_id: str,
    need: Role,
    for_update: bool = False,
) -> tuple[Conversation, ConversationBranch | None]:
    """The thread, read for a `principal` that holds `need` on it (`access.authorize`,
    the one rule): unknown, deleted or half-built → 404; a stranger, a role below
    `need` or a thread outside a link's family → 403; a revoked or expired share → 401."""
    conv, branch, _ = await get_with_role(
        s, principal, thread_id=thread_id, need=need, for_update=for_update
    )
    return conv, branch


async def get_with_role(
    s: AsyncSession,
    principal: Principal,
    *,
    thread_id: str,
    need: Role,
    for_update: bool = False,
) -> tuple[Conversation, ConversationBranch | None, Role]:
    """`get_for`, with the role the principal holds on the thread's family."""
    found = await shares_repo.thread_with_grants(
        s, thread_id, user_id=principal.id, for_update=for_update
    )
    if found is None:
        raise NotFound(f"conversation {thread_id} not found")
    conv, branch, grants = found
    check_visible(conv, branch)
    role = await access.authorize(s, principal, conv, need, grants=grants)
    return conv, branch, role


async def check_for(
    s: AsyncSession,
    principal: Principal,
    conv: Conversation,
    branch: ConversationBranch | None,
    *,
    need: Role,
) -> Role:
    """`get_for`'s rule on a thread already read; the principal's role."""
    check_visible(conv, branch)
    return await access.authorize(s, principal, conv, need)


async def family_of_item(
    s: AsyncSession,
    *,
    thread_id: str,
    principal: Principal,
    need: Role,
    missing: str,
) -> tuple[Conversation, ConversationBranch | None]:
    """The family of an item named by its own id (a share, a note, a job) for a
    caller who needs `need` on it. A caller who cannot read the family (a stranger, a
    revoked or expired share) or a family that is gone → 404 `missing`, which names
    nothing of it: such a caller cannot tell another family's item from no item. A
    reader whose role is below `need` → 403, as for the family's own routes."""
    try:
        conv, branch = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
    except (NotFound, Forbidden, Unauthorized):
        raise NotFound(missing) from None
    if need > Role.VIEWER:
        await check_for(s, principal, conv, branch, need=need)
    return conv, branch


def check_visible(conv: Conversation, branch: ConversationBranch | None) -> None:
    """404 for a deleted or half-built thread, whoever asks."""
    hidden = conv.building or (branch is not None and branch.status == BranchStatus.PENDING)
    if conv.deleted_at is not None or hidden:
        raise NotFound(f"conversation {conv.thread_id} not found")


async def create(
    db: Database,
    *,
    principal: Principal,
    title: str | None = None,
    objective: str | None = None,
    thread_id: str | None = None,
) -> ConversationOut:
    """A new root thread; `thread_id` lets a client choose it (AHP `createSession`, or
    the studio's conversation created on its first send). Without a title it is named
    after its objective (`services.families.titles`)."""
    access.permit(principal, Deed.CREATE)
    thread_id = thread_id or new_thread_id()
    async with db.transaction() as s:
        if await repo.get_thread(s, thread_id) is not None:
            raise AlreadyExists(f"conversation {thread_id} already exists")
        conv = await add_root(
            s, thread_id=thread_id, user_id=principal.id, title=title, objective=objective
        )
        return to_view(conv, None)


async def add_root_if_missing(s: AsyncSession, principal: Principal, *, thread_id: str) -> bool:
    """A first send's or edit's `?create=true`: the thread as a new root owned by
    `principal` when no thread has its id (asked of a caller that may create one, or
    not: `Deed.CREATE`), in the caller's transaction, so that a send or
    an edit refused or failed leaves no empty conversation; whether it was created. An
    existing thread (another user's, a deleted one) is left as it is: the caller's
    access check answers for it. A new id must be one the studio makes (as a create's
    `new_id`)."""
    access.permit(principal, Deed.CREATE)
    if await repo.get_thread(s, thread_id) is not None:
        return False
    if not NEW_THREAD_ID.fullmatch(thread_id):
        raise InvalidInput(
            f"no conversation {thread_id}; a new one's id is th_ and 32 hexadecimal digits"
        )
    await add_root(s, thread_id=thread_id, user_id=principal.id)
    return True


async def add_root(
    s: AsyncSession,
    *,
    thread_id: str,
    user_id: int,
    title: str | None = None,
    objective: str | None = None,
    logged: bool = True,
) -> Conversation:
    """Insert a new root thread and its `created` action in the session's transaction
    (`create`, and a first send that creates its conversation: `turn_open`).
    `logged=False` leaves the action to the caller (`log_created`), which appends it
    last: an append holds the log's lock until the commit."""
    conv = new_root(thread_id=thread_id, user_id=user_id, title=title, objective=objective)
    s.add(conv)
    await s.flush()
    if logged:
        await log_created(s, thread_id)
    return conv


def new_root(
    *, thread_id: str, user_id: int, title: str | None = None, objective: str | None = None
) -> Conversation:
    """The row of a new root thread, not yet added (`add_root`; a batch adds many at
    once, and appends their `created_row`s)."""
    return Conversation(
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


async def log_created(s: AsyncSession, thread_id: str) -> None:
    """The `created` action of the new root `thread_id` (see `add_root`)."""
    await action_log.append_rows(s, [created_row(thread_id)])


def created_row(thread_id: str) -> tuple[str, str, dict[str, Any]]:
    """The action log's row of `log_created`."""
    return action_log.catalogue_row(thread_id, thread_id, "created")


async def list_for_user(
    db: Database, *, principal: Principal, archived: bool = False
) -> list[ConversationOut]:
    """The caller's listed threads; archived ones (and what lies below them) only when
    `archived` is true."""
    access.permit(principal, Deed.LIST)
    async with db.read() as s:
        rows = await repo.list_visible_for_user(s, principal.id)
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


async def get(db: Database, *, principal: Principal, thread_id: str) -> ConversationOut:
    async with db.read() as s:
        conv, branch = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        return to_view(conv, branch, archived=await is_archived(s, conv))


async def set_archived(
    db: Database, *, principal: Principal, thread_id: str, archived: bool
) -> ConversationOut:
    """Archive (or unarchive) a thread: it and its descendants leave the list and show
    as archived on the graph; no row is deleted, so unarchiving restores the view.

    One statement on the thread's row and one catalogue action, in one transaction:
    on failure nothing changed. Followers see `haico/threadChanged` `archived`.
    """
    async with db.transaction() as s:
        conv, branch = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
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
    principal: Principal,
    thread_id: str,
    title: str | None = None,
    name: str | None = None,
    set_name: bool = False,
) -> ConversationOut:
    """Change the title and/or (with `set_name`) the branch name; a blank name clears it.

    Followers of the family see it as `haico/threadChanged` `renamed`.
    """
    async with db.transaction() as s:
        conv, branch = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
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
