"""Pairwise judgments: which of two sibling alternatives is better (or a tie), by a
criterion, with a rationale. Siblings share their parent node, or are both
root-level (a first turn, or a branch at 0); anything else → 422 `not_siblings`.

Who may judge is the one rule's `CODER`; whose judgments a reader sees follows
codings (`rule.sees_every_coding`: blind until revealed, the owner sees all). A
judgment is one row, written in one transaction.
"""

from __future__ import annotations

from sqlalchemy import select

from haico.db.engine import Database
from haico.db.models import Judgment, User
from haico.db.repositories import coding as repo
from haico.domain import NodeId, aware, now
from haico.errors import InvalidInput, NotSiblings
from haico.schemas.coding import JudgmentIn, JudgmentOut
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.coding.codings import reader_of
from haico.services.families.conversations import get_for
from haico.services.families.model import Family


def judgment_out(j: Judgment) -> JudgmentOut:
    return JudgmentOut(
        id=j.id,
        a=j.a,
        b=j.b,
        preferred=j.preferred,
        criterion=j.criterion,
        rationale=j.rationale,
        judge=j.judge,
        created_at=aware(j.created_at),
        imported_author=j.imported_author,
    )


def check_siblings(family: Family, a: NodeId, b: NodeId) -> None:
    """422 `not_siblings` unless a and b are two retained nodes with one parent."""
    for node in (a, b):
        if node not in family.nodes:
            raise InvalidInput(f"node {node} is not a node of this conversation")
    if a == b:
        raise NotSiblings("a node is not its own sibling")
    if family.parent(a) != family.parent(b):
        raise NotSiblings(f"{a} and {b} are not siblings: their parents differ")


async def create(
    db: Database, *, principal: Principal, thread_id: str, body: JudgmentIn
) -> JudgmentOut:
    access.permit(principal, Deed.CODE)
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.CODER)
        family = await Family.load(s, conv.root_thread_id, nodes=True)
        a, b = NodeId.parse(body.a), NodeId.parse(body.b)
        if a is None or b is None:  # the schema's pattern keeps this from happening
            raise InvalidInput("a and b are node ids")
        check_siblings(family, a, b)
        judge = await s.scalar(select(User.name).where(User.id == principal.id))
        row = Judgment(
            user_id=principal.id,
            root_thread_id=conv.root_thread_id,
            a=str(a),
            b=str(b),
            preferred=body.preferred,
            criterion=body.criterion,
            rationale=body.rationale,
            judge=judge or "",
            created_at=now(),
        )
        s.add(row)
        await s.flush()
        return judgment_out(row)


async def family_judgments(
    db: Database, *, principal: Principal, thread_id: str
) -> list[JudgmentOut]:
    """The family's judgments the caller sees (every judge's, or their own while
    blind), oldest first."""
    async with db.read() as s:
        reader = await reader_of(s, principal, thread_id=thread_id)
        mine = None if reader.sees_all else principal.id
        return [judgment_out(j) for j in await repo.judgments_of(s, [reader.root], judge_id=mine)]


__all__ = ["check_siblings", "create", "family_judgments"]
