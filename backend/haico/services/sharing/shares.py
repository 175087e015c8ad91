"""Sharing a family: the owner grants a role to a named user or through a link.

A link is a share whose grantee is a user row of its own (`users.is_link`, never
listed, never given an API token): its secret `sh_…` token is shown once and stored as
a SHA-256 digest. A link grants at most `commenter`. Only the family's owner creates,
lists and revokes shares (`access.Role.OWNER`). Who may then do what is
`services.access`'s one check; this module only writes and reads the grants.

Each write is one transaction (the share row, a link's user row, and the family's
catalogue action naming its author): on failure nothing changed.
"""

from __future__ import annotations

import secrets
from datetime import UTC, datetime

from haico.db.engine import Database
from haico.db.models import Share, User, new_share_uid
from haico.db.repositories import shares as repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import users as users_repo
from haico.domain import now
from haico.errors import InvalidInput, NotFound, Unauthorized
from haico.events import log as action_log
from haico.schemas.shares import ShareCreate, SharedConversationOut, ShareOut
from haico.services.access import rule as access
from haico.services.access import users
from haico.services.access.principal import Kind, Principal
from haico.services.access.rule import Deed, Role, aware, is_live
from haico.services.access.users import hash_token
from haico.services.families.conversations import (
    archived_among,
    family_of_item,
    get_for,
    to_view,
)

LINK_PREFIX = "sh_"
LINK_USER_PREFIX = "link:"


def to_out(share: Share, grantee: User, *, token: str | None = None) -> ShareOut:
    return ShareOut(
        id=share.uid,
        role=Role.of(share.role).wire,
        user=None if grantee.is_link else grantee.name,
        token=token,
        created_at=share.created_at,
        expires_at=aware(share.expires_at) if share.expires_at else None,
        revoked=share.revoked_at is not None,
    )


async def create(
    db: Database, *, principal: Principal, thread_id: str, body: ShareCreate
) -> ShareOut:
    """A share of `thread_id`'s whole family. With `body.user`, a grant to that user;
    without, a link whose token the answer carries (the only time it is shown)."""
    access.permit(principal, Deed.SHARE)
    role = Role.of(body.role)
    if body.user is None and role > Role.COMMENTER:
        raise InvalidInput("role: a link grants viewer or commenter, never editor")
    expires = aware(body.expires_at) if body.expires_at is not None else None
    if expires is not None and expires <= datetime.now(UTC):
        raise InvalidInput("expires_at: must be in the future")
    token: str | None = None
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.OWNER)
        root = conv.root_thread_id
        if body.user is not None:
            grantee = await users_repo.by_name(s, body.user)
            if grantee is None or grantee.is_link:
                raise NotFound(f"no user named {body.user!r}")
            if grantee.id == principal.id:
                raise InvalidInput("user: the owner already holds every right")
        else:
            token = LINK_PREFIX + secrets.token_urlsafe(32)
            grantee = await users_repo.add(s, LINK_USER_PREFIX + secrets.token_hex(8))
            grantee.is_link = True
        share = Share(
            root_thread_id=root,
            grantee_id=grantee.id,
            role=role.wire,
            token_hash=hash_token(token) if token else None,
            uid=new_share_uid(),
            created_by=principal.id,
            created_at=now(),
            expires_at=expires,
        )
        s.add(share)
        await s.flush()
        await action_log.append_catalogue(
            s, root, root, "shared", share_id=share.uid, role=role.wire, author_id=principal.id
        )
        return to_out(share, grantee, token=token)


async def list_for_family(db: Database, *, principal: Principal, thread_id: str) -> list[ShareOut]:
    access.permit(principal, Deed.SHARE)
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.OWNER)
        return [to_out(sh, u) for sh, u in await repo.of_family(s, conv.root_thread_id)]


NO_SHARE = "no such share"


async def revoke(db: Database, *, principal: Principal, share_id: str) -> None:
    """Revoke a share (again is a no-op): the next request made with it is refused, and
    open event streams and AHP connections that rely on it close within seconds. A
    share of a family the caller cannot read is 404, as an unknown id is: nothing in
    the answer tells them apart; a reader who is not the owner is 403."""
    access.permit(principal, Deed.SHARE)
    async with db.transaction() as s:
        share = await repo.by_uid(s, share_id)
        if share is None:
            raise NotFound(NO_SHARE)
        await family_of_item(
            s,
            thread_id=share.root_thread_id,
            principal=principal,
            need=Role.OWNER,
            missing=NO_SHARE,
        )
        if share.revoked_at is None:
            share.revoked_at = now()
            await s.flush()
            root = share.root_thread_id
            await action_log.append_catalogue(
                s, root, root, "unshared", share_id=share.uid, author_id=principal.id
            )


async def shared_with(db: Database, *, principal: Principal) -> list[SharedConversationOut]:
    """Every listed thread of the families shared with the caller (live shares only),
    with the caller's role and the owner's name; archived threads left out."""
    access.permit(principal, Deed.LIST)
    at = datetime.now(UTC)
    async with db.read() as s:
        rows = await repo.shared_with(s, principal.id)
    best: dict[str, Role] = {}
    for _, _, sh, _ in rows:
        if is_live(sh.revoked_at, sh.expires_at, at=at):
            root = sh.root_thread_id
            best[root] = max(best.get(root, Role.VIEWER), Role.of(sh.role))
    seen: set[str] = set()
    pairs = []
    for c, b, _, owner in rows:
        if c.root_thread_id in best and c.thread_id not in seen:
            seen.add(c.thread_id)
            pairs.append((c, b, owner))
    hidden = archived_among([(c, b) for c, b, _ in pairs])
    return [
        SharedConversationOut(
            **to_view(c, b).model_dump(),
            role=best[c.root_thread_id].wire,
            owner=owner.name,
        )
        for c, b, owner in pairs
        if c.thread_id not in hidden
    ]


async def authenticate_link(db: Database, *, token: str) -> Principal:
    """The link's own user, if `token` is a live link: unknown, revoked or expired → 401."""
    async with db.read() as s:
        found = await repo.link_by_token_hash(s, hash_token(token))
    if found is None:
        raise Unauthorized("unknown token")
    share, grantee = found
    if share.revoked_at is not None:
        raise Unauthorized("this share link was revoked")
    if not is_live(None, share.expires_at, at=datetime.now(UTC)):
        raise Unauthorized("this share link has expired")
    return Principal(
        grantee.id, grantee.name, kind=Kind.LINK, family=share.root_thread_id, share_id=share.id
    )


async def authenticate(db: Database, *, token: str | None) -> Principal:
    """The caller a bearer token names: a share link (`sh_…`) or a user's API token
    (`services.identity.bearer` adds the study participant)."""
    if token is not None and token.startswith(LINK_PREFIX):
        return await authenticate_link(db, token=token)
    return await users.authenticate(db, token=token)


async def link_alive(db: Database, *, share_id: int) -> bool:
    """Whether the link `share_id` still opens its family (not revoked, not expired,
    the family not deleted)."""
    async with db.read() as s:
        share = await repo.by_id(s, share_id)
        if share is None or not is_live(share.revoked_at, share.expires_at, at=datetime.now(UTC)):
            return False
        root = await threads_repo.get_thread(s, share.root_thread_id)
        return root is not None and root.deleted_at is None


async def shared_roots(db: Database, *, principal: Principal) -> list[str]:
    """The roots of the families shared with the caller through a live share."""
    at = datetime.now(UTC)
    async with db.read() as s:
        rows = await repo.unrevoked_of(s, principal.id)
    return sorted({sh.root_thread_id for sh in rows if is_live(None, sh.expires_at, at=at)})
