"""A study's members: users the owner names as coders or viewers. Both read the study
and every participant's family of it (the access rule reads them beside the shares);
neither writes a family, sees the join token or manages members. Each write is one
statement in one transaction."""

from __future__ import annotations

from sqlalchemy.exc import IntegrityError

from haico.db.engine import Database
from haico.db.models_studies import StudyMember
from haico.db.repositories import studies as repo
from haico.db.repositories import users as users_repo
from haico.domain import now
from haico.errors import AlreadyExists, InvalidInput, NotFound
from haico.schemas.studies import MemberIn, MemberOut
from haico.services.access.principal import Principal
from haico.services.studies.study import owned, readable

# How many members one study may have.
MAX_MEMBERS = 200


def _out(member: StudyMember, name: str) -> MemberOut:
    return MemberOut(
        user=name,
        role="coder" if member.role == "coder" else "viewer",
        created_at=member.created_at,
    )


async def add(db: Database, *, principal: Principal, study_id: str, body: MemberIn) -> MemberOut:
    """Name a user a coder or viewer of the study; naming a member again changes its role."""
    try:
        async with db.transaction() as s:
            await owned(s, principal, study_id, for_update=True)
            user = await users_repo.by_name(s, body.user)
            if user is None or user.is_link:
                raise NotFound(f"no user named {body.user!r}")
            if user.id == principal.id:
                raise InvalidInput("user: the owner already reads everything of the study")
            member = await repo.member(s, study_id, user.id)
            if member is None:
                if len(await repo.members(s, study_id)) >= MAX_MEMBERS:
                    raise InvalidInput(f"a study has at most {MAX_MEMBERS} members")
                member = StudyMember(
                    study_id=study_id, user_id=user.id, role=body.role, created_at=now()
                )
                s.add(member)
            else:
                member.role = body.role
            await s.flush()
            return _out(member, user.name)
    except IntegrityError as exc:
        raise AlreadyExists(f"{body.user!r} was added at the same time; read the members") from exc


async def list_members(db: Database, *, principal: Principal, study_id: str) -> list[MemberOut]:
    """The study's members, in the order they were added (owner and members read it)."""
    async with db.read() as s:
        await readable(s, principal, study_id)
        return [_out(m, u.name) for m, u in await repo.members(s, study_id)]


async def remove(db: Database, *, principal: Principal, study_id: str, user: str) -> None:
    """Take a member off the study: from the next request on it reads nothing of it."""
    async with db.transaction() as s:
        await owned(s, principal, study_id, for_update=True)
        found = await users_repo.by_name(s, user)
        if found is None or not await repo.remove_member(s, study_id, found.id):
            raise NotFound(f"{user!r} is no member of this study")
