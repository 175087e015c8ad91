"""REFI-QDA export: a `.qdpx` (a zip holding `project.qde`, QDA-XML valid against the
REFI-QDA Project.xsd 1.0 vendored in `refi/`), which ATLAS.ti, NVivo, MAXQDA and
QualCoder import.

- Users: every coder and note author (a GUID derived from the name, so two exports
  name a coder alike).
- CodeBook: the codes (children nested under their parent; retired codes kept, since
  codings still point at them).
- Sources: one TextSource per path (a thread's lineage), its plain text each step as
  `[node id]`, `User: ` and the user message, `Assistant: ` and the reply.
- Each coding is a PlainTextSelection in the source of the thread that owns its node,
  at the code-point positions of its span (the whole step: the step's text from its
  `User: ` to the end of its reply), with a Coding naming its code and coder; its
  memo is a Note the selection refers to.
- Notes: the researchers' notes (referred to by their thread's source) and the memos.
- Study exports: a `condition` Variable and one Case per participant, whose sources
  are their family's paths.

A coding on a node no shown path holds (a deleted branch) is left out.
"""

from __future__ import annotations

import io
import re
import uuid
import zipfile
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from pathlib import Path
from typing import IO, Any

from lxml import etree

from haico.db.models import Code
from haico.domain import NodeId, aware
from haico.services.datasets.material import FamilyMaterial, Material

NS = "urn:QDA-XML:project:1.0"
SCHEMA = Path(__file__).with_name("refi") / "Project.xsd"
_GUIDS = uuid.UUID("6f1c3b1e-0d5a-4d6e-9a0b-6a1c0d2e3f40")


@lru_cache(maxsize=4096)
def _named(kind: str, key: str) -> str:
    return str(uuid.uuid5(_GUIDS, f"{kind}:{key}"))


def guid(kind: str, key: object) -> str:
    """A stable GUID for a thing of `kind`: a row's id is written into a GUID of its
    kind (so two exports name a coding alike, and tens of thousands cost no hashing);
    a name (a user, a source's thread) is hashed (uuid5), once per export."""
    if isinstance(key, int):
        prefix = _named(kind, "")[:24]
        return f"{prefix}{key:012x}"
    return _named(kind, str(key))


@lru_cache(maxsize=64)
def _q(tag: str) -> str:
    return f"{{{NS}}}{tag}"


SELECTION, CODING, CODE_REF, NOTE_REF = (
    _q(t) for t in ("PlainTextSelection", "Coding", "CodeRef", "NoteRef")
)


# What XML 1.0 cannot hold (C0 controls but tab, newline and carriage return; lone
# surrogates; U+FFFE and U+FFFF). Each becomes U+FFFD, one code point for one, so
# every position in a source stays the step's own.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def xml_safe(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def _attrs(**attrs: str) -> dict[str, str]:
    return {k: xml_safe(v) for k, v in attrs.items() if v}


def _when(at: datetime) -> str:
    return aware(at).isoformat(timespec="seconds")


@dataclass(frozen=True)
class Place:
    """Where one step's text lies in its source (code points)."""

    step: tuple[int, int]
    user_message: tuple[int, int]
    reply: tuple[int, int]


def source_text(
    nodes: list[NodeId], texts: dict[tuple[str, int], tuple[str, str]]
) -> tuple[str, dict[NodeId, Place]]:
    """A path as plain text, and where each step lies in it."""
    parts: list[str] = []
    places: dict[NodeId, Place] = {}
    at = 0

    def put(text: str) -> tuple[int, int]:
        nonlocal at
        parts.append(text)
        start = at
        at += len(text)
        return start, at

    for node in nodes:
        user, reply = texts.get((node.thread_id, node.turn), ("", ""))
        put(f"[{node}]\n")
        step_start, _ = put("User: ")
        u = put(user)
        put("\nAssistant: ")
        r = put(reply)
        places[node] = Place(step=(step_start, r[1]), user_message=u, reply=r)
        put("\n\n")
    return "".join(parts), places


def selection_of(coding: Any, place: Place) -> tuple[int, int]:
    if coding.field is None or coding.span_start is None or coding.span_end is None:
        return place.step
    base = place.user_message[0] if coding.field == "user_message" else place.reply[0]
    return int(base + coding.span_start), int(base + coding.span_end)


def _codebook(xf: Any, codes: dict[int, Code]) -> None:
    if not codes:
        return
    kids: dict[int | None, list[Code]] = {}
    for c in codes.values():
        parent = c.parent_id if c.parent_id in codes else None
        kids.setdefault(parent, []).append(c)

    def element(code: Code, seen: set[int]) -> etree._Element:
        seen.add(code.id)
        el = etree.Element(
            _q("Code"),
            _attrs(
                guid=guid("code", code.id),
                name=code.name,
                isCodable="true",
                color=code.color or "",
            ),
        )
        if code.description:
            etree.SubElement(el, _q("Description")).text = xml_safe(code.description)
        for kid in kids.get(code.id, []):
            if kid.id not in seen:
                el.append(element(kid, seen))
        return el

    seen: set[int] = set()
    with xf.element(_q("CodeBook")), xf.element(_q("Codes")):
        for code in kids.get(None, []):
            xf.write(element(code, seen))
        for code in codes.values():  # a parent cycle leaves codes unplaced: top level
            if code.id not in seen:
                xf.write(element(code, seen))


@dataclass(frozen=True)
class _Note:
    guid: str
    text: str
    author: str
    at: datetime
    title: str


def write_project(out: IO[bytes], material: Material, *, name: str, study: bool = False) -> None:
    """`project.qde`, written element by element into `out` (a zip entry): only one
    source's selections are held as elements at a time."""
    users = {c.coder for f in material.families for c in f.codings}
    users |= {n.author for f in material.families for n in f.notes if n.author}
    notes: list[_Note] = []
    with etree.xmlfile(out, encoding="utf-8") as xf:
        xf.write_declaration()
        project = {"name": xml_safe(name), "origin": "HAICO"}
        with xf.element(_q("Project"), project, nsmap={None: NS}):
            if users:
                with xf.element(_q("Users")):
                    for user in sorted(users):
                        xf.write(
                            etree.Element(_q("User"), guid=guid("user", user), name=xml_safe(user))
                        )
            _codebook(xf, material.codes)
            if study:
                _cases(xf, material)
            if any(fm.paths for fm in material.families):
                with xf.element(_q("Sources")):
                    for fm in material.families:
                        _family_sources(xf, fm, material.codes, notes)
            else:
                notes += [_note_of(n) for fm in material.families for n in fm.notes]
            if notes:
                with xf.element(_q("Notes")):
                    for n in notes:
                        el = etree.Element(
                            _q("Note"),
                            _attrs(
                                guid=n.guid,
                                name=n.title,
                                creatingUser=guid("user", n.author) if n.author else "",
                                creationDateTime=_when(n.at),
                            ),
                        )
                        etree.SubElement(el, _q("PlainTextContent")).text = xml_safe(n.text)
                        xf.write(el)


def _cases(xf: Any, material: Material) -> None:
    """The `condition` Variable, and a Case per participant naming its sources."""
    with xf.element(_q("Variables")):
        xf.write(
            etree.Element(
                _q("Variable"),
                guid=guid("var", "condition"),
                name="condition",
                typeOfVariable="Text",
            )
        )
    with xf.element(_q("Cases")):
        for fm in material.families:
            case = etree.Element(
                _q("Case"), guid=guid("case", fm.root), name=xml_safe(fm.tag.participant or fm.root)
            )
            value = etree.SubElement(case, _q("VariableValue"))
            etree.SubElement(value, _q("VariableRef"), targetGUID=guid("var", "condition"))
            etree.SubElement(value, _q("TextValue")).text = xml_safe(fm.tag.condition or "")
            for thread_id, _ in fm.paths:
                etree.SubElement(case, _q("SourceRef"), targetGUID=guid("source", thread_id))
            xf.write(case)


def _note_of(n: Any) -> _Note:
    title = f"Note on {n.thread_id}:{n.turn_index}"
    return _Note(guid("note", n.id), n.text, n.author, n.created_at, title)


def _family_sources(
    xf: Any, fm: FamilyMaterial, codes: dict[int, Code], notes: list[_Note]
) -> None:
    by_node: dict[NodeId, list[Any]] = {}
    for c in fm.codings:
        by_node.setdefault(NodeId(c.thread_id, c.turn_index), []).append(c)
    notes_by_thread: dict[str, list[str]] = {}
    for n in fm.notes:
        note = _note_of(n)
        notes.append(note)
        notes_by_thread.setdefault(n.thread_id, []).append(note.guid)
    for thread_id, path in fm.paths:
        text, places = source_text(path, fm.texts)
        src = etree.Element(
            _q("TextSource"),
            guid=guid("source", thread_id),
            name=xml_safe(_source_name(fm, thread_id)),
        )
        etree.SubElement(src, _q("PlainTextContent")).text = xml_safe(text)
        for node in fm.own_nodes(thread_id, path):
            for c in by_node.get(node, []):
                start, end = selection_of(c, places[node])
                code = codes.get(c.code_id)
                coder, when = guid("user", c.coder), _when(c.created_at)
                sel = etree.SubElement(
                    src,
                    SELECTION,
                    guid=guid("selection", c.id),
                    name=xml_safe(code.name) if code is not None else str(c.code_id),
                    startPosition=str(start),
                    endPosition=str(end),
                    creatingUser=coder,
                )
                coding = etree.SubElement(
                    sel,
                    CODING,
                    guid=guid("coding", c.id),
                    creatingUser=coder,
                    creationDateTime=when,
                )
                etree.SubElement(coding, CODE_REF, targetGUID=guid("code", c.code_id))
                if c.memo:
                    memo = _Note(
                        guid("memo", c.id), c.memo, c.coder, c.created_at, f"Memo on {node}"
                    )
                    notes.append(memo)
                    etree.SubElement(sel, NOTE_REF, targetGUID=memo.guid)
        for note_guid in notes_by_thread.get(thread_id, []):
            etree.SubElement(src, _q("NoteRef"), targetGUID=note_guid)
        xf.write(src)


def _source_name(fm: FamilyMaterial, thread_id: str) -> str:
    row = fm.family.threads.get(thread_id)
    branch = (row.name if row is not None else None) or thread_id
    who = f"{fm.tag.participant} " if fm.tag.participant else ""
    return f"{who}{row.title if row is not None else ''} — {branch}".strip()


def qdpx(material: Material, *, name: str, study: bool = False) -> bytes:
    """The `.qdpx` archive: `project.qde` (the sources are inline), written straight
    into the zip."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z,
        z.open("project.qde", "w") as entry,
    ):
        write_project(entry, material, name=name, study=study)
    return buffer.getvalue()


def schema() -> etree.XMLSchema:
    """The vendored REFI-QDA Project schema, to validate a `project.qde` against."""
    return etree.XMLSchema(etree.parse(str(SCHEMA)))
