"""Notes: the researcher's own remarks on a node, with free-form codes.

A note is the researcher's, never the model's: no prompt builder, transcript or
checkpoint reads the `notes` table. Every change is one transaction: the row, its
search entry (`kind: "note"`) and an action on the family's annotations channel
(`ahp-session:/<uuid>/annotations`, AHP 1.0.0's `annotations/set` and
`annotations/removed`, `origin.turnId` = the node), which the family's event stream
carries too.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Note, SearchEntry, User
from haico.db.repositories import ledger as repo
from haico.db.repositories import search as search_repo
from haico.db.repositories import threads as threads_repo
from haico.domain import NodeId, now
from haico.errors import Forbidden, NotFound
from haico.events import log as action_log
from haico.schemas.ledger import CodeCount, NoteIn, NoteOut, NotePatch
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.families.conversations import family_of_item, get_for
from haico.services.ledger.provenance import note_out, resolve_node


def annotations_channel(root_thread_id: str) -> str:
    return action_log.session_channel(root_thread_id) + "/annotations"


def annotation(note: Note) -> dict[str, Any]:
    """A note as an AHP 1.0.0 `Annotation` anchored to its node."""
    node = NodeId.format(note.thread_id, note.turn_index)
    return {
        "id": f"note-{note.id}",
        "origin": {
            "session": action_log.session_channel(note.root_thread_id),
            "chat": action_log.chat_channel(note.root_thread_id),
            "turnId": node,
        },
        "resource": f"haico-node:/{node}",
        "resolved": False,
        "entries": [
            {
                "id": "text",
                "text": note.text,
                "_meta": {"haico/codes": list(note.codes or []), "haico/author": note.author},
            }
        ],
        "_meta": {"haico/noteId": note.id, "haico/nodeId": node},
    }


def _clean_codes(codes: list[str]) -> list[str]:
    """Codes trimmed, duplicates dropped, first spelling kept."""
    out: list[str] = []
    for code in codes:
        c = code.strip()
        if c and c not in out:
            out.append(c)
    return out


async def index_note_in(s: AsyncSession, note: Note) -> None:
    """(Re)write the note's search entry (its kind is `note`)."""
    await s.execute(delete(SearchEntry).where(SearchEntry.digest == f"note:{note.id}"))
    text = " ".join([note.text, *(note.codes or [])])
    await s.execute(
        *search_repo.entries_write(
            s,
            user_id=note.user_id,
            root_thread_id=note.root_thread_id,
            thread_id=note.thread_id,
            turn_index=note.turn_index,
            texts=[("note", text, f"note:{note.id}")],
        )
    )


async def _log(s: AsyncSession, note: Note, action: dict[str, Any], seqs: list[int] | None) -> None:
    """Log the change on the annotations channel; its serverSeq goes into `seqs` (an
    AHP client's dispatch gets its origin on that action's echo)."""
    logged = await action_log.append_rows(
        s, [(note.root_thread_id, annotations_channel(note.root_thread_id), action)]
    )
    if seqs is not None:
        seqs.extend(e.seq for e in logged)


async def create_note(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    turn: int,
    body: NoteIn,
    family: str | None = None,
    seqs: list[int] | None = None,
) -> NoteOut:
    """A note on node `turn` of the thread's path (an ancestor's or a fork source's
    node is that thread's); `family`, when given, is the family the node must be in."""
    async with db.transaction() as s:
        owner, node = await resolve_node(
            s, principal=principal, thread_id=thread_id, turn=turn, need=Role.COMMENTER
        )
        if family is not None and owner.root_thread_id != family:
            raise NotFound(f"node {node} is not in this session")
        author = await s.scalar(select(User.name).where(User.id == principal.id))
        stamp = now()
        note = Note(
            user_id=principal.id,
            root_thread_id=owner.root_thread_id,
            thread_id=node.thread_id,
            turn_index=node.turn,
            text=body.text,
            codes=_clean_codes(body.codes),
            author=author or "",
            created_at=stamp,
            updated_at=stamp,
        )
        s.add(note)
        await s.flush()
        await index_note_in(s, note)
        await _log(s, note, {"type": "annotations/set", "annotation": annotation(note)}, seqs)
        return note_out(note, principal)


NO_NOTE = "no such note"


async def _owned_note(
    s: AsyncSession, *, principal: Principal, note_id: int, family: str | None = None
) -> Note:
    """The caller's own note, to change it. A note of a family the caller cannot read
    is answered as no note at all (404 naming nothing); a reader's attempt on someone
    else's note, or a role below commenter, is 403."""
    note = await s.get(Note, note_id)
    if note is None or (family is not None and note.root_thread_id != family):
        raise NotFound(NO_NOTE)
    await family_of_item(
        s, thread_id=note.thread_id, principal=principal, need=Role.COMMENTER, missing=NO_NOTE
    )
    if note.user_id != principal.id:
        raise Forbidden("this note is another user's")
    return note


async def update_note(
    db: Database,
    *,
    principal: Principal,
    note_id: int,
    body: NotePatch,
    family: str | None = None,
    seqs: list[int] | None = None,
) -> NoteOut:
    async with db.transaction() as s:
        note = await _owned_note(s, principal=principal, note_id=note_id, family=family)
        if body.text is not None:
            note.text = body.text
        if body.codes is not None:
            note.codes = _clean_codes(body.codes)
        note.updated_at = now()
        await s.flush()
        await index_note_in(s, note)
        await _log(s, note, {"type": "annotations/set", "annotation": annotation(note)}, seqs)
        return note_out(note, principal)


async def delete_note(
    db: Database,
    *,
    principal: Principal,
    note_id: int,
    family: str | None = None,
    seqs: list[int] | None = None,
) -> None:
    async with db.transaction() as s:
        note = await _owned_note(s, principal=principal, note_id=note_id, family=family)
        await s.execute(delete(SearchEntry).where(SearchEntry.digest == f"note:{note.id}"))
        removed = {"type": "annotations/removed", "annotationId": f"note-{note.id}"}
        await _log(s, note, removed, seqs)
        await s.delete(note)


async def family_notes(db: Database, *, principal: Principal, thread_id: str) -> list[NoteOut]:
    """Every note on the nodes of the thread's family, oldest first."""
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        threads = await threads_repo.family_threads(s, conv.root_thread_id)
        notes = await repo.notes_of(s, [t.thread_id for t in threads])
        return [note_out(n, principal) for n in notes]


async def family_annotations(
    db: Database, *, principal: Principal, root_thread_id: str
) -> list[dict[str, Any]]:
    """The family's notes as AHP `Annotation`s (its annotations channel's state)."""
    async with db.read() as s:
        await get_for(s, principal, thread_id=root_thread_id, need=Role.VIEWER)
        threads = await threads_repo.family_threads(s, root_thread_id)
        found = await repo.notes_of(s, [t.thread_id for t in threads])
        return [annotation(n) for n in found]


async def codebook(db: Database, *, principal: Principal) -> list[CodeCount]:
    """The caller's codes with how many notes carry each, most used first."""
    access.permit(principal, Deed.CODEBOOK)
    async with db.read() as s:
        lists = await repo.user_codes(s, principal.id)
    counts = Counter(code for codes in lists for code in codes)
    return [
        CodeCount(code=c, count=n) for c, n in sorted(counts.items(), key=lambda x: (-x[1], x[0]))
    ]
