"""The research ledger in a family's export document, and back on import: each
node's provenance, its edits (origins kept) and its notes (re-indexed for search,
owned by the importing user).

A document written before the ledger existed carries no edits: the import then
records the node's changes (its workspace against the one before it) with origin
`import`, so every node still says what changed in it, and that nobody knows who."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.models import NodeProvenance, Note, WorkspaceEdit
from haico.db.repositories import ledger as repo
from haico.domain import aware, now
from haico.schemas.export import (
    ExportEdit,
    ExportNode,
    ExportNote,
    ExportProvenance,
    ExportWorkspace,
)
from haico.services.access.principal import Principal


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
                imported_author=n.imported_author,
                created_at=aware(n.created_at),
                updated_at=aware(n.updated_at),
            )
        )
    return out


def _item_changes(
    surface: str, before: list[Any], after: list[Any]
) -> list[tuple[str, str | None, str]]:
    old = {x.uid: x for x in before}
    new = {x.uid: x for x in after}
    out: list[tuple[str, str | None, str]] = [
        (surface, x.uid, "add" if x.uid not in old else "change")
        for x in after
        if x.uid not in old or old[x.uid] != x
    ]
    out += [(surface, uid, "remove") for uid in old if uid not in new]
    return out


def derived_edits(
    before: ExportWorkspace | None, after: ExportWorkspace | None
) -> list[tuple[str, str | None, str]]:
    """(surface, uid, kind) of what changed from `before` to `after`."""
    if after is None:
        return []
    b = before or ExportWorkspace(objective=None, document=None, preferences=[], todos=[])
    out: list[tuple[str, str | None, str]] = []
    if b.objective != after.objective:
        out.append(("objective", None, "change"))
    if b.document != after.document:
        out.append(("document", None, "change"))
    out += _item_changes("preference", b.preferences, after.preferences)
    out += _item_changes("todo", b.todos, after.todos)
    return out


def recorded_author(author: str | None, imported_author: str | None) -> str | None:
    """Who a document says made a node or note: its `author`, or for a copy that was
    itself imported (whose author is its importer) the author recorded before."""
    if imported_author:
        return imported_author
    return author or None


async def import_ledger(
    s: AsyncSession,
    *,
    principal: Principal,
    importer: str,
    root_thread_id: str,
    thread_id: str,
    node: ExportNode,
    before: ExportWorkspace | None,
) -> list[Note]:
    """Write one imported node's ledger rows; the notes added (to index once flushed).
    `before` is the workspace the node started from (for a document without edits).
    Every note is the importer's (`importer`, the user's name); the author the
    document names is kept as its `imported_author`."""
    k = node.turn_index
    if node.provenance is not None:
        s.add(NodeProvenance(thread_id=thread_id, turn_index=k, **node.provenance.model_dump()))
    for e in node.edits:
        s.add(WorkspaceEdit(thread_id=thread_id, turn_index=k, **e.model_dump()))
    if not node.edits and node.provenance is None:
        at = node.completed_at or node.captured_at or now()
        for surface, uid, kind in derived_edits(before, node.workspace):
            s.add(
                WorkspaceEdit(
                    thread_id=thread_id,
                    turn_index=k,
                    surface=surface,
                    uid=uid,
                    kind=kind,
                    origin="import",
                    author=None,
                    at=at,
                )
            )
    notes = []
    for n in node.notes:
        stamp = now()
        note = Note(
            user_id=principal.id,
            root_thread_id=root_thread_id,
            thread_id=thread_id,
            turn_index=k,
            text=n.text,
            codes=list(n.codes),
            author=importer,
            imported_author=recorded_author(n.author, n.imported_author),
            created_at=n.created_at or stamp,
            updated_at=n.updated_at or stamp,
        )
        s.add(note)
        notes.append(note)
    return notes
