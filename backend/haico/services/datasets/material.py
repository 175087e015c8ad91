"""What every export of a family reads, loaded once: its threads and retained nodes,
each node's whole text, the codings and judgments the caller sees, the codes they use,
and the notes.

A path is a thread's lineage from the family's first node to the thread's tip (the
nodes this family holds; a fork's inherited steps are its source family's). Each
node is written once, in the path of the thread that owns it: a node shared by
several paths is coded once, so it is placed once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import Code, Judgment, Note
from haico.db.repositories import coding as repo
from haico.db.repositories import ledger as ledger_repo
from haico.domain import NodeId
from haico.services.families.model import Family


@dataclass(frozen=True)
class Tag:
    """Who a study family belongs to (empty for a plain family)."""

    participant: str | None = None
    condition: str | None = None


@dataclass
class FamilyMaterial:
    root: str
    family: Family
    # Each shown thread with its path (oldest first), parents before children.
    paths: list[tuple[str, list[NodeId]]]
    texts: dict[tuple[str, int], tuple[str, str]]
    codings: list[Any]  # coding rows (`Coding`'s columns)
    notes: list[Note]
    judgments: list[Judgment]
    tag: Tag = field(default_factory=Tag)

    def own_nodes(self, thread_id: str, path: list[NodeId]) -> list[NodeId]:
        """The nodes of a path its thread owns (each node's one place)."""
        return [n for n in path if n.thread_id == thread_id]


@dataclass
class Material:
    families: list[FamilyMaterial]
    codes: dict[int, Code]


async def load_family(
    s: AsyncSession,
    root: str,
    *,
    coder_id: int | None,
    tag: Tag | None = None,
) -> FamilyMaterial:
    """One family's material; `coder_id`: only that coder's codings and judgments
    (the caller's own while coding is blind), None: every coder's."""
    return (await load_families(s, [(root, tag or Tag())], coder_id=coder_id))[0]


async def load_families(
    s: AsyncSession, tagged: list[tuple[str, Tag]], *, coder_id: int | None
) -> list[FamilyMaterial]:
    """`load_family` for many families: their codings, judgments, notes and texts in
    one query each, whatever their number."""
    roots = [root for root, _ in tagged]
    families = {root: await Family.load(s, root, nodes=True) for root in roots}
    shown = {root: families[root].shown(root) for root in roots}
    codings = _by_root(await repo.coding_rows(s, roots, coder_id=coder_id))
    judgments = _by_root(await repo.judgments_of(s, roots, judge_id=coder_id))
    thread_root = {t.thread_id: root for root in roots for t in shown[root]}
    notes: dict[str, list[Note]] = {}
    for n in await ledger_repo.notes_of(s, list(thread_root)):
        notes.setdefault(thread_root[n.thread_id], []).append(n)
    texts = await repo.node_texts(
        s, [(n.thread_id, n.turn) for f in families.values() for n in f.nodes]
    )
    out: list[FamilyMaterial] = []
    for root, tag in tagged:
        family = families[root]
        paths = [
            (t.thread_id, list(reversed(family.ancestors(family.tip(t.thread_id)))))
            for t in shown[root]
        ]
        out.append(
            FamilyMaterial(
                root=root,
                family=family,
                paths=paths,
                texts=texts,
                codings=codings.get(root, []),
                notes=notes.get(root, []),
                judgments=judgments.get(root, []),
                tag=tag,
            )
        )
    return out


def _by_root(rows: Iterable[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for r in rows:
        out.setdefault(r.root_thread_id, []).append(r)
    return out


async def codes_for(
    s: AsyncSession,
    families: Iterable[FamilyMaterial],
    owner_ids: Iterable[int],
    book_ids: Iterable[int] = (),
) -> dict[int, Code]:
    """The codes of the owners' codebooks and of `book_ids` (a study's), with any
    other code a coding uses."""
    books = await repo.codebooks_of(s, list(set(owner_ids)))
    ids = {b.id for b in books} | set(book_ids)
    codes = {c.id: c for c in await repo.codes_of(s, sorted(ids))}
    missing = {c.code_id for f in families for c in f.codings} - set(codes)
    if missing:
        codes.update({c.id: c for c in await repo.codes_by_id(s, missing)})
    return codes
