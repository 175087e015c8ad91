"""Revealing a family's codings, or a study's: who may, what it changes, and how open
studios learn it.

A family's codings are revealed by its owner (the root's `reveal_codings`, copied on
every thread of the family). A study's family is revealed by its study instead
(`Study.reveal`, for every family of the study at once), so on such a family the
reveal is the study owner's call and sets the study's flag; the family's own flag is
left alone (it decides nothing there).

Each reveal, or hide again, is announced on every family it concerns
(`studies.revealing`) in the transaction that changes the flag: a failure in either
leaves neither.
"""

from __future__ import annotations

from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Conversation
from haico.db.models_studies import Study
from haico.db.repositories import studies as studies_repo
from haico.errors import Forbidden
from haico.schemas.conversations import ConversationOut, FamilyStudy
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import get_with_role, is_archived, to_view
from haico.services.studies.revealing import announce, study_families


async def _study_of(s: AsyncSession, principal: Principal, root: str) -> tuple[Study, str] | None:
    """The study the family belongs to and the caller's role on it (owner, coder,
    viewer), when they read it; None for any other family or reader."""
    found = await studies_repo.study_of_family(s, root)
    return None if found is None else await _standing(s, principal, found[0])


async def _standing(
    s: AsyncSession, principal: Principal, study: Study
) -> tuple[Study, str] | None:
    if study.owner_id == principal.id:
        return study, "owner"
    role = await studies_repo.member_role(s, study.id, principal.id)
    return (study, role) if role in ("coder", "viewer") else None


def _with_study(out: ConversationOut, found: tuple[Study, str] | None) -> ConversationOut:
    if found is None:
        return out
    study, role = found
    return out.model_copy(
        update={
            "reveal_codings": bool(study.reveal),
            "study": FamilyStudy(id=study.id, name=study.name, role=role),
        }
    )


async def conversation(db: Database, *, principal: Principal, thread_id: str) -> ConversationOut:
    """The thread as any reader reads it; on a study's family, for the study's owner
    and members, with its study and the study's reveal."""
    async with db.read() as s:
        conv, branch, _ = await get_with_role(s, principal, thread_id=thread_id, need=Role.VIEWER)
        out = to_view(conv, branch, archived=await is_archived(s, conv))
        return _with_study(out, await _study_of(s, principal, conv.root_thread_id))


async def set_reveal(
    db: Database, *, principal: Principal, thread_id: str, reveal: bool
) -> ConversationOut:
    """Reveal (or hide again) every coder's codings of the thread's family: its
    owner's call, one statement over the family's rows; on a study's family, the
    study owner's, for the whole study (anyone else: 403)."""
    async with db.transaction() as s:
        conv, branch, role = await get_with_role(
            s, principal, thread_id=thread_id, need=Role.VIEWER
        )
        root = conv.root_thread_id
        of_family = await studies_repo.study_of_family(s, root)
        found = None if of_family is None else await _standing(s, principal, of_family[0])
        if of_family is not None:
            if found is None or found[1] != "owner":
                raise Forbidden("a study's codings are revealed by the study's owner")
            study = found[0]
            if bool(study.reveal) != reveal:
                study.reveal = reveal
                await s.flush()
                await announce(s, await study_families(s, study.id), reveal=reveal)
        else:
            if role is not Role.OWNER:
                raise Forbidden("only the family's owner reveals its codings")
            await s.execute(
                update(Conversation)
                .where(Conversation.root_thread_id == root)
                .values(reveal_codings=reveal)
            )
            await announce(s, [root], reveal=reveal)
            await s.refresh(conv)
        out = to_view(conv, branch, archived=await is_archived(s, conv))
        return _with_study(out, found)
