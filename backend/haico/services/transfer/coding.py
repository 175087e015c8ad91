"""A family's coding in its export document, and back on import: the codebooks its
codings use (every code of each, retired ones too), the codings and the judgments.

The export holds what its reader sees (blind coding holds here too: a coder exports
their own codings and judgments until they are revealed; the owner exports all), on
the nodes the document carries. Codes travel by name within their codebook's `key`.

On import every codebook is created anew as the importer's, and every coding and
judgment is the importer's (`coder`/`judge` is the importer's name): the coder the
document records is kept as `imported_author`, since that user may not exist here
and a document can name anyone. Rows are written in the import's first transaction,
so a failed import leaves none of them (`importing`'s undo deletes the codebooks it
made with the threads).
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import Code, Codebook, Coding, Judgment
from haico.db.repositories import coding as repo
from haico.domain import NodeId, now
from haico.schemas.export_coding import (
    ExportCode,
    ExportCodebook,
    ExportCoding,
    ExportJudgment,
)
from haico.services.access.principal import Principal
from haico.services.coding.codings import coding_out, reader_of, visible
from haico.services.coding.judgments import judgment_out
from haico.services.transfer.checking import Plan
from haico.services.transfer.ledger import recorded_author

Nodes = set[tuple[str, int]]
CodingPart = tuple[list[ExportCodebook], list[ExportCoding], list[ExportJudgment]]


def _key(book_id: int) -> str:
    return f"codebook-{book_id}"


async def export_coding(
    s: AsyncSession, principal: Principal, *, root: str, nodes: Nodes
) -> CodingPart:
    """The codebooks, codings and judgments of the family `root` that the caller
    sees, on the `nodes` the document carries."""
    reader = await reader_of(s, principal, thread_id=root)
    codings = [
        c for c in await visible(s, principal, reader) if (c.thread_id, c.turn_index) in nodes
    ]
    judge = None if reader.sees_all else principal.id
    judgments = [
        j
        for j in await repo.judgments_of(s, [root], judge_id=judge)
        if all(_node(x) in nodes for x in (j.a, j.b))
    ]
    codes = {c.id: c for c in await repo.codes_by_id(s, {c.code_id for c in codings})}
    books = await repo.codebooks_by_id(s, {c.codebook_id for c in codes.values()})
    all_codes = await repo.codes_of(s, [b.id for b in books])
    return (
        [_codebook(b, [c for c in all_codes if c.codebook_id == b.id]) for b in books],
        [_coding(c, codes[c.code_id]) for c in codings],
        [_judgment(j) for j in judgments],
    )


def _node(node_id: str) -> tuple[str, int] | None:
    node = NodeId.parse(node_id)
    return (node.thread_id, node.turn) if node is not None else None


def _codebook(book: Codebook, codes: list[Code]) -> ExportCodebook:
    names = {c.id: c.name for c in codes}
    return ExportCodebook(
        key=_key(book.id),
        name=book.name,
        codes=[
            ExportCode(
                name=c.name,
                description=c.description or "",
                color=c.color,
                parent=names.get(c.parent_id) if c.parent_id is not None else None,
                retired=bool(c.retired),
            )
            for c in codes
        ],
    )


def _coding(c: Coding, code: Code) -> ExportCoding:
    out = coding_out(c, caller=c.user_id)
    return ExportCoding(
        node_id=out.node_id,
        codebook=_key(code.codebook_id),
        code=code.name,
        span=out.span,
        memo=out.memo,
        coder=out.coder,
        imported_author=out.imported_author,
        created_at=out.created_at,
    )


def _judgment(j: Judgment) -> ExportJudgment:
    return ExportJudgment(**judgment_out(j).model_dump(exclude={"id"}))


def _new_node(plan: Plan, node_id: str) -> NodeId:
    node = NodeId.parse(node_id)
    assert node is not None  # checked (`check_coding`)
    return NodeId(plan.ids[node.thread_id], node.turn)


async def import_coding(
    s: AsyncSession, plan: Plan, *, principal: Principal, importer: str
) -> list[int]:
    """Write the document's codebooks, codings and judgments as the importer's, on the
    new family's nodes; the ids of the codebooks made."""
    root = plan.ids[plan.root.thread_id]
    codes: dict[tuple[str, str], Code] = {}
    made = []
    for b in plan.doc.codebooks:
        book = Codebook(user_id=principal.id, name=b.name, created_at=now(), updated_at=now())
        s.add(book)
        await s.flush()
        made.append(book.id)
        for c in b.codes:
            parent = codes[(b.key, c.parent)].id if c.parent is not None else None
            code = Code(
                codebook_id=book.id,
                name=c.name,
                description=c.description,
                color=c.color,
                parent_id=parent,
                retired=c.retired,
                created_at=now(),
            )
            s.add(code)
            await s.flush()
            codes[(b.key, c.name)] = code
    for coding in plan.doc.codings:
        node = _new_node(plan, coding.node_id)
        s.add(
            Coding(
                user_id=principal.id,
                root_thread_id=root,
                thread_id=node.thread_id,
                turn_index=node.turn,
                code_id=codes[(coding.codebook, coding.code)].id,
                field=coding.span.field if coding.span else None,
                span_start=coding.span.start if coding.span else None,
                span_end=coding.span.end if coding.span else None,
                memo=coding.memo,
                coder=importer,
                imported_author=recorded_author(coding.coder, coding.imported_author),
                created_at=coding.created_at or now(),
            )
        )
    for j in plan.doc.judgments:
        s.add(
            Judgment(
                user_id=principal.id,
                root_thread_id=root,
                a=str(_new_node(plan, j.a)),
                b=str(_new_node(plan, j.b)),
                preferred=j.preferred,
                criterion=j.criterion,
                rationale=j.rationale,
                judge=importer,
                imported_author=recorded_author(j.judge, j.imported_author),
                created_at=j.created_at or now(),
            )
        )
    await s.flush()
    return made
