"""The one access rule: may this principal do this to this family, or at all.

Services ask it through `families.conversations.get_for` (or `check_for` on a row they
already read); nothing else decides who may touch a family. Two questions:

`authorize(s, principal, conv, need)`: the principal's role on `conv`'s family, refused
when below `need`.

- a link or a participant reaches its own family only: any other → 403;
- the family's owner holds `OWNER` (no query: the conversation row says so), except a
  study participant, which owns its family but holds `EDITOR` on it (never deletes
  it), `VIEWER` once it finished, and no write before it consented when its study
  asks for consent (403 `consent_required`): its session's state is read each time;
- a share (`shares`, on the family's root) grants `VIEWER`, `COMMENTER` or `EDITOR` to a
  named user or to a link's own user; the highest live one counts;
- a study's owner and coders hold `CODER`, its viewers `VIEWER`, on every
  participant's family of it (read beside the shares, only when they grant nothing);
- revoked or expired shares, and no live one → 401; no share at all → 403, as for any
  stranger.

What each need covers: `VIEWER` every read of the family; `CODER` codings and
judgments too (a coder's own; `sees_every_coding` says whose a reader sees);
`COMMENTER` notes too;
`EDITOR` turns, workspace edits, checkout, branch, merge, replay, names, archive;
`OWNER` deleting the family and managing its shares.

`permit(principal, deed)`: whether the principal may do something that no role on an
existing family covers (make a family, import, fork, manage shares, the codebook across
families, model profiles, studies, exports). `CONFINED` is the one place that says what
a link or a participant may never do (a link may still export the family it reads).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from enum import IntEnum, StrEnum

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import Conversation, Share
from haico.db.repositories import shares as repo
from haico.db.repositories import studies as studies_repo
from haico.errors import ConsentRequired, Forbidden, Unauthorized
from haico.services.access.principal import Kind, Principal


class Role(IntEnum):
    VIEWER = 1
    CODER = 2  # a study's coder: reads and codes, writes nothing else (never a share)
    COMMENTER = 3
    EDITOR = 4
    OWNER = 5

    @property
    def wire(self) -> str:
        return self.name.lower()

    @classmethod
    def of(cls, wire: str) -> Role:
        return cls[wire.upper()]


class Deed(StrEnum):
    """What a caller may do beyond a role on one existing family."""

    LIST = "list and search what it may read"
    CREATE = "create a conversation"
    IMPORT = "import a conversation"
    FORK = "fork a conversation"  # the copy is a new family: it needs an owner
    SHARE = "manage shares"
    CODEBOOK = "read the codebook across conversations"
    PROFILES = "manage model profiles"
    STUDIES = "run or read studies"
    EXPORT = "export a conversation"
    SESSION = "consent to or finish a study session"  # a participant's own, only
    CODE = "code or judge steps"  # a study's participants are coded, they do not code


# A link or a participant owns nothing and reaches one family: within it its role
# decides; beyond it, only the listing (of that family) is left. A link's reader may
# export what it reads; a participant's work leaves the server only through its study.
CONFINED: frozenset[Deed] = frozenset(Deed) - {Deed.LIST, Deed.SESSION}
REFUSED: dict[Kind, frozenset[Deed]] = {
    Kind.USER: frozenset({Deed.SESSION}),
    Kind.LINK: (CONFINED - {Deed.EXPORT, Deed.CODE}) | {Deed.SESSION},
    Kind.PARTICIPANT: CONFINED,
}


def aware(at: datetime) -> datetime:
    """SQLite hands timestamps back naive (they were written in UTC)."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def is_live(revoked_at: datetime | None, expires_at: datetime | None, *, at: datetime) -> bool:
    return revoked_at is None and (expires_at is None or aware(expires_at) > at)


def sees_every_coding(role: Role, *, revealed: bool, runs_study: bool = False) -> bool:
    """Whether a reader of a family sees every coder's codings and judgments (and the
    agreement between them), or only their own: the family's owner and the owner of
    the study it belongs to (`runs_study`) always; others once the family's (or its
    study's) codings are revealed. Blind coding until then."""
    return role is Role.OWNER or runs_study or revealed


def permit(principal: Principal, deed: Deed) -> None:
    """403 when `deed` is beyond what the principal's kind may ever do."""
    if deed in REFUSED[principal.kind]:
        if deed is Deed.SESSION:
            raise Forbidden("only a study participant (a pt_ token) has a study session")
        what = "share link" if principal.kind is Kind.LINK else "study participant"
        raise Forbidden(f"a {what} opens its family only: it cannot {deed.value}")


def settled(principal: Principal, conv: Conversation, need: Role) -> Role | None:
    """The rule on the conversation row alone: 403 outside a link's or a participant's
    family, `OWNER` for the family's owner, None when the caller's shares must be read
    (`granted`). Every access decision starts here."""
    if principal.family is not None and conv.root_thread_id != principal.family:
        raise Forbidden(f"conversation {conv.thread_id} belongs to another user")
    if principal.kind is Kind.PARTICIPANT:
        return None  # its session's state decides (`authorize`)
    return at_least(Role.OWNER, need) if conv.user_id == principal.id else None


def granted(conv: Conversation, need: Role, grants: Sequence[Share]) -> Role:
    """The highest live role among a caller's shares of `conv`'s family, at least `need`."""
    at = datetime.now(UTC)
    live = [Role.of(g.role) for g in grants if is_live(g.revoked_at, g.expires_at, at=at)]
    if not live:
        if grants:
            raise Unauthorized("your share of this conversation was revoked or has expired")
        raise Forbidden(f"conversation {conv.thread_id} belongs to another user")
    return at_least(max(live), need)


def at_least(role: Role, need: Role) -> Role:
    if role < need:
        raise Forbidden(f"your role on this conversation ({role.wire}) does not allow this")
    return role


async def authorize(
    s: AsyncSession,
    principal: Principal,
    conv: Conversation,
    need: Role,
    *,
    grants: Sequence[Share] | None = None,
) -> Role:
    """The role `principal` holds on `conv`'s family, at least `need`: 403 outside a
    link's or a participant's family, for a stranger or below `need`; 401 when its
    shares were all revoked or have expired. `grants`: the caller's shares of the
    family, when read already (`shares.thread_with_grants`)."""
    role = settled(principal, conv, need)
    if role is not None:
        return role
    if principal.kind is Kind.PARTICIPANT:
        return await _participant(s, principal, conv, need)
    if grants is None:
        grants = await repo.grants(s, root_thread_id=conv.root_thread_id, grantee_id=principal.id)
    try:
        return granted(conv, need, grants)
    except (Forbidden, Unauthorized):
        # A study's owner and coders code its participants' families, its viewers read.
        if principal.kind is Kind.USER:
            study_role = await studies_repo.role_on_family(s, conv.root_thread_id, principal.id)
            if study_role is not None:
                return at_least(Role.VIEWER if study_role == "viewer" else Role.CODER, need)
        raise


async def _participant(
    s: AsyncSession, principal: Principal, conv: Conversation, need: Role
) -> Role:
    """A participant on its own family: `EDITOR` while it works, `VIEWER` once it
    finished; before it consented (when its study asks), no write."""
    found = await studies_repo.participant_state(s, principal.id)
    if found is None or conv.user_id != principal.id:
        raise Forbidden(f"conversation {conv.thread_id} belongs to another user")
    state, asks_consent = found
    if state == "finished":
        if need > Role.VIEWER:
            raise Forbidden("this study session is finished: its conversation is read-only")
        return Role.VIEWER
    if need > Role.VIEWER and state == "joined" and asks_consent:
        raise ConsentRequired("consent to the study first")
    return at_least(Role.EDITOR, need)
