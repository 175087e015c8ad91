"""`dispatchAction` on a session's annotations channel (AHP 1.0.0): an AHP client
writes the research ledger's notes the way REST does, through the same service and
its ownership checks.

- `annotations/set` with a new id creates a note on the node `origin.turnId` names
  (a node of this session's family); the text is the first entry's (a string or
  `{markdown}`), the codes its `_meta["haico/codes"]`. The host assigns the note's
  id: its authoritative `annotations/set` (whose `origin` names the client's
  dispatch) carries `note-<id>` instead of the id the client proposed. With the id of
  an existing note (`note-<id>`) it replaces that note's text and codes.
- `annotations/entrySet` on `note-<id>` replaces the text (and codes, when its
  `_meta` names them) of the note's one entry.
- `annotations/removed` deletes the note.

A note has one entry and is never resolved, so `annotations/updated` and
`annotations/entryRemoved` are refused. Every refusal (a malformed action, a node or
note that is not in this session or not the caller's) comes back to its sender as
the echoed action with `rejectionReason`, and nothing is written.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from haico.ahp.protocol import ANNOTATIONS, Json, family_of
from haico.ahp.state import ConnectionState, reject
from haico.domain import NodeId
from haico.errors import DomainError
from haico.schemas.ledger import NoteIn, NotePatch
from haico.services.ledger import notes

_NOTE_PREFIX = "note-"


class _Refused(Exception):
    """The action cannot be applied (its reason in `args[0]`)."""


def is_annotations(channel: Any) -> bool:
    return isinstance(channel, str) and channel.endswith(ANNOTATIONS)


def _note_id(value: Any) -> int:
    text = value if isinstance(value, str) else ""
    digits = text.removeprefix(_NOTE_PREFIX)
    if not text.startswith(_NOTE_PREFIX) or not digits.isdigit() or len(digits) > 18:
        raise _Refused(f"annotation {value!r} is not a note of this session")
    return int(digits)


def _entry_fields(entry: Any) -> tuple[str, list[str] | None]:
    """The text and codes (None: not given) of an `AnnotationEntry`."""
    if not isinstance(entry, dict):
        raise _Refused("entry: expected an object")
    text = entry.get("text")
    if isinstance(text, dict):
        text = text.get("markdown")
    if not isinstance(text, str):
        raise _Refused("entry.text: expected a string or {markdown}")
    meta = entry.get("_meta")
    codes = meta.get("haico/codes") if isinstance(meta, dict) else None
    if codes is not None and not (
        isinstance(codes, list) and all(isinstance(c, str) for c in codes)
    ):
        raise _Refused('entry._meta["haico/codes"]: expected a list of strings')
    return text, codes


async def dispatch(conn: ConnectionState, channel: str, action: Json, origin: Json) -> None:
    """Apply one client action on `channel` (an annotations channel)."""
    kind = action.get("type")
    try:
        assert conn.adapter is not None
        if not conn.adapter.version.startswith("1."):
            raise _Refused("annotations channels need protocol version 1.0.0")
        root = family_of(channel.removesuffix(ANNOTATIONS), "ahp-session")
        if kind == "annotations/set":
            await _set(conn, root, action, origin)
        elif kind == "annotations/entrySet":
            note_id = _note_id(action.get("annotationId"))
            text, codes = _entry_fields(action.get("entry"))
            await _write(conn, origin, "update", note_id, root, NotePatch(text=text, codes=codes))
        elif kind == "annotations/removed":
            await _write(conn, origin, "delete", _note_id(action.get("annotationId")), root)
        else:
            raise _Refused(f"{kind}: not an action clients dispatch here")
    except _Refused as exc:
        reject(conn, channel, action, origin, str(exc.args[0]))
    except DomainError as exc:
        reject(conn, channel, action, origin, exc.message)
    except ValidationError as exc:
        reject(conn, channel, action, origin, _first_error(exc))


def _first_error(exc: ValidationError) -> str:
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err.get("loc", ()))
    return f"{where}: {err.get('msg', 'invalid')}" if where else str(err.get("msg", "invalid"))


async def _set(conn: ConnectionState, root: str, action: Json, origin: Json) -> None:
    ann = action.get("annotation")
    if not isinstance(ann, dict):
        raise _Refused("annotation: expected an object")
    entries = ann.get("entries")
    if not isinstance(entries, list) or not entries:
        raise _Refused("annotation.entries: an annotation has at least one entry")
    if len(entries) > 1:
        raise _Refused("annotation.entries: a note has one entry")
    text, codes = _entry_fields(entries[0])
    ann_id = ann.get("id")
    if isinstance(ann_id, str) and ann_id.startswith(_NOTE_PREFIX):
        patch = NotePatch(text=text, codes=codes)
        await _write(conn, origin, "update", _note_id(ann_id), root, patch)
        return
    where = ann.get("origin")
    turn_id = where.get("turnId") if isinstance(where, dict) else None
    node = NodeId.parse(turn_id) if isinstance(turn_id, str) else None
    if node is None:
        raise _Refused("annotation.origin.turnId: the node the note is on")
    body = NoteIn(text=text, codes=codes or [])
    seqs: list[int] = []
    async with conn.lock:
        await notes.create_note(
            conn.db,
            principal=conn.user,
            thread_id=node.thread_id,
            turn=node.turn,
            body=body,
            family=root,
            seqs=seqs,
        )
        for seq in seqs:
            conn.origins[seq] = origin


async def _write(
    conn: ConnectionState,
    origin: Json,
    op: str,
    note_id: int,
    root: str,
    patch: NotePatch | None = None,
) -> None:
    seqs: list[int] = []
    async with conn.lock:
        if op == "delete":
            await notes.delete_note(
                conn.db, principal=conn.user, note_id=note_id, family=root, seqs=seqs
            )
        else:
            assert patch is not None
            await notes.update_note(
                conn.db, principal=conn.user, note_id=note_id, body=patch, family=root, seqs=seqs
            )
        for seq in seqs:
            conn.origins[seq] = origin
