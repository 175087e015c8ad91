"""Codings: a coder applies a code to a node, the whole step or a span of its user
message or reply (offsets in Unicode code points, `0 ≤ start < end ≤ length`), with a
memo.

Who may code is the one rule's `CODER` (the owner, editors, commenters, and a
study's owner and coders on its families). A coding's code comes from a codebook of
the family's owner or from its study's codebook, and is not retired (else 422).
Coding is blind: a reader sees their own codings until the family's owner (a study
family: the study's owner) reveals them (`reveal`); the owner always sees all
(`rule.sees_every_coding`).

A change is one transaction: the row and an action on the family's annotations
channel (AHP 1.0.0 `annotations/set` / `annotations/removed`, `origin.turnId` = the
node), as for notes; a failure in either leaves neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Coding, Conversation, User
from haico.db.repositories import coding as repo
from haico.db.repositories import studies as studies_repo
from haico.domain import NodeId, aware, now
from haico.errors import Forbidden, InvalidInput, NotFound
from haico.events import log as action_log
from haico.schemas.coding import CodingIn, CodingOut, Span
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.coding.codebooks import study_codebook
from haico.services.families.conversations import family_of_item, get_with_role
from haico.services.ledger.notes import annotations_channel
from haico.services.ledger.provenance import resolve_node

NO_CODING = "no such coding"
# A coding's annotation id is `coding-<id>`; its actions name the coder's user id in
# `_meta`, so the live paths can keep coding blind (`coding.blind`).
PREFIX = "coding-"
CODER_ID = "haico/coderId"


@dataclass(frozen=True)
class Reader:
    """A caller's standing on a family's codings: its root, the caller's role, and
    whether they see every coder's codings."""

    root: str
    owner_id: int
    role: Role
    sees_all: bool
    # Whether they see every coding whatever the reveal (the owner, the study's owner).
    always: bool = False
    # The codebook of the study the family belongs to (its coders' codes).
    study_codebook: int | None = None


async def reader_of(s: AsyncSession, principal: Principal, *, thread_id: str) -> Reader:
    """The caller's standing on the thread's family (any reader of it). A study
    family's codings are revealed by its study, and its study's owner sees them all."""
    conv, _, role = await get_with_role(s, principal, thread_id=thread_id, need=Role.VIEWER)
    study = await studies_repo.study_of_family(s, conv.root_thread_id)
    if study is not None:
        revealed, runs = study[0].reveal, study[0].owner_id == principal.id
    else:
        root = (
            conv
            if conv.thread_id == conv.root_thread_id
            else await s.get(Conversation, conv.root_thread_id)
        )
        revealed, runs = (bool(root.reveal_codings) if root is not None else False), False
    return Reader(
        root=conv.root_thread_id,
        owner_id=conv.user_id,
        role=role,
        sees_all=access.sees_every_coding(role, revealed=revealed, runs_study=runs),
        always=access.sees_every_coding(role, revealed=False, runs_study=runs),
        study_codebook=study_codebook(study[0]) if study is not None else None,
    )


def coding_out(c: Coding, *, caller: int) -> CodingOut:
    """The coding as its reader `caller` (a user id) sees it: `mine` when they made it."""
    span = (
        Span(field=c.field, start=c.span_start, end=c.span_end)
        if c.field is not None and c.span_start is not None and c.span_end is not None
        else None
    )
    return CodingOut(
        id=c.id,
        node_id=NodeId.format(c.thread_id, c.turn_index),
        code_id=c.code_id,
        coder=c.coder,
        span=span,
        memo=c.memo or "",
        created_at=aware(c.created_at),
        imported_author=c.imported_author,
        mine=c.user_id == caller,
    )


def annotation(c: Coding) -> dict[str, Any]:
    """A coding as an AHP 1.0.0 `Annotation` anchored to its node."""
    node = NodeId.format(c.thread_id, c.turn_index)
    span = (
        {"field": c.field, "start": c.span_start, "end": c.span_end}
        if c.field is not None
        else None
    )
    return {
        "id": f"{PREFIX}{c.id}",
        "origin": {
            "session": action_log.session_channel(c.root_thread_id),
            "chat": action_log.chat_channel(c.root_thread_id),
            "turnId": node,
        },
        "resource": f"haico-node:/{node}",
        "resolved": False,
        "entries": [
            {
                "id": "memo",
                "text": c.memo or "",
                "_meta": {"haico/codeId": c.code_id, "haico/span": span, "haico/coder": c.coder},
            }
        ],
        "_meta": {"haico/codingId": c.id, "haico/nodeId": node, CODER_ID: c.user_id},
    }


async def _log(s: AsyncSession, root: str, action: dict[str, Any]) -> None:
    await action_log.append_rows(s, [(root, annotations_channel(root), action)])


def check_span(span: Span, texts: tuple[str, str]) -> None:
    """422 unless `0 ≤ start < end ≤ length` of the field, in code points."""
    text = texts[0] if span.field == "user_message" else texts[1]
    if not 0 <= span.start < span.end <= len(text):
        raise InvalidInput(
            f"span {span.start}..{span.end} is outside the {span.field} "
            f"({len(text)} characters): 0 ≤ start < end ≤ length"
        )


async def usable_code(
    s: AsyncSession, *, code_id: int, family_owner: int, study_codebook: int | None
) -> None:
    """422 unless the code is a live code of a codebook of the family's owner, or of
    the codebook of the study the family belongs to."""
    found = await repo.code_with_book(s, code_id)
    if found is None or (found[1].user_id != family_owner and found[1].id != study_codebook):
        raise InvalidInput(f"code {code_id} is not a code of this conversation's codebooks")
    if found[0].retired:
        raise InvalidInput(f"code {code_id} is retired")


async def create(
    db: Database, *, principal: Principal, thread_id: str, turn: int, body: CodingIn
) -> CodingOut:
    """A coding on node `turn` of the thread's path."""
    access.permit(principal, Deed.CODE)
    async with db.transaction() as s:
        owner, node = await resolve_node(
            s, principal=principal, thread_id=thread_id, turn=turn, need=Role.CODER
        )
        study = await studies_repo.study_of_family(s, owner.root_thread_id)
        await usable_code(
            s,
            code_id=body.code_id,
            family_owner=owner.user_id,
            study_codebook=study_codebook(study[0]) if study is not None else None,
        )
        if body.span is not None:
            texts = await repo.node_texts(s, [(node.thread_id, node.turn)])
            if (node.thread_id, node.turn) not in texts:
                raise NotFound(f"node {node} has no record (it was pruned)")
            check_span(body.span, texts[(node.thread_id, node.turn)])
        coder = await s.scalar(select(User.name).where(User.id == principal.id))
        coding = Coding(
            user_id=principal.id,
            root_thread_id=owner.root_thread_id,
            thread_id=node.thread_id,
            turn_index=node.turn,
            code_id=body.code_id,
            field=body.span.field if body.span else None,
            span_start=body.span.start if body.span else None,
            span_end=body.span.end if body.span else None,
            memo=body.memo or "",
            coder=coder or "",
            created_at=now(),
        )
        s.add(coding)
        await s.flush()
        await _log(
            s, coding.root_thread_id, {"type": "annotations/set", "annotation": annotation(coding)}
        )
        return coding_out(coding, caller=principal.id)


async def delete(db: Database, *, principal: Principal, coding_id: int) -> None:
    """Delete the caller's own coding. One of a family the caller cannot read → 404
    naming nothing; someone else's, or a role below commenter → 403."""
    access.permit(principal, Deed.CODE)
    async with db.transaction() as s:
        coding = await s.get(Coding, coding_id)
        if coding is None:
            raise NotFound(NO_CODING)
        await family_of_item(
            s,
            thread_id=coding.thread_id,
            principal=principal,
            need=Role.CODER,
            missing=NO_CODING,
        )
        if coding.user_id != principal.id:
            raise Forbidden("this coding is another coder's")
        removed = {
            "type": "annotations/removed",
            "annotationId": f"{PREFIX}{coding.id}",
            "_meta": {CODER_ID: coding.user_id},
        }
        await _log(s, coding.root_thread_id, removed)
        await s.delete(coding)


async def visible(s: AsyncSession, principal: Principal, reader: Reader) -> list[Coding]:
    """The family's codings the caller sees: every coder's, or their own while blind."""
    mine = None if reader.sees_all else principal.id
    return await repo.codings_of(s, [reader.root], coder_id=mine)


async def family_codings(db: Database, *, principal: Principal, thread_id: str) -> list[CodingOut]:
    """The family's codings the caller sees, oldest first."""
    async with db.read() as s:
        reader = await reader_of(s, principal, thread_id=thread_id)
        return [coding_out(c, caller=principal.id) for c in await visible(s, principal, reader)]


async def family_annotations(
    db: Database, *, principal: Principal, root_thread_id: str
) -> list[dict[str, Any]]:
    """The family's codings the caller sees, as AHP `Annotation`s."""
    async with db.read() as s:
        reader = await reader_of(s, principal, thread_id=root_thread_id)
        return [annotation(c) for c in await visible(s, principal, reader)]
