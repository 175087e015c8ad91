"""The research ledger in a family's export document, and back on import: each
node's provenance, its edits (origins kept) and its notes (re-indexed for search,
owned by the importing user)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.models import NodeProvenance, Note, WorkspaceEdit
from app.db.repositories import ledger as repo
from app.domain import aware, now
from app.schemas_export import ExportEdit, ExportNode, ExportNote, ExportProvenance


async def export_ledger(
    s: AsyncSession, thread_ids: list[str]
) -> dict[tuple[str, int], dict[str, Any]]:
    """(thread, turn) -> the ledger fields of that node's `ExportNode`."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for key, p in (await repo.provenance_of(s, thread_ids)).items():
        out.setdefault(key, {})["provenance"] = ExportProvenance(
            **{f: getattr(p, f) for f in repo.PROVENANCE_FIELDS}
        )
    for e in await repo.edits_of(s, thread_ids):
        out.setdefault((e.thread_id, e.turn_index), {}).setdefault("edits", []).append(
            ExportEdit(
                surface=e.surface,
                uid=e.uid,
                kind=e.kind,
                origin=e.origin,
                author=e.author,
                at=aware(e.at),
            )
        )
    for n in await repo.notes_of(s, thread_ids):
        out.setdefault((n.thread_id, n.turn_index), {}).setdefault("notes", []).append(
            ExportNote(
                text=n.text,
                codes=list(n.codes or []),
                author=n.author,
                created_at=aware(n.created_at),
                updated_at=aware(n.updated_at),
            )
        )
    return out


async def import_ledger(
    s: AsyncSession, *, user_id: int, root_thread_id: str, thread_id: str, node: ExportNode
) -> list[Note]:
    """Write one imported node's ledger rows; the notes added (to index once flushed)."""
    k = node.turn_index
    if node.provenance is not None:
        s.add(NodeProvenance(thread_id=thread_id, turn_index=k, **node.provenance.model_dump()))
    for e in node.edits:
        s.add(WorkspaceEdit(thread_id=thread_id, turn_index=k, **e.model_dump()))
    notes = []
    for n in node.notes:
        stamp = now()
        note = Note(
            user_id=user_id,
            root_thread_id=root_thread_id,
            thread_id=thread_id,
            turn_index=k,
            text=n.text,
            codes=list(n.codes),
            author=n.author,
            created_at=n.created_at or stamp,
            updated_at=n.updated_at or stamp,
        )
        s.add(note)
        notes.append(note)
    return notes
