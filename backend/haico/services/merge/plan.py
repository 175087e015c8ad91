"""The merge planner: a pure function of three workspace states.

`base` is what both sides started from, `ours` the target's live workspace and
`theirs` the source's. A change is listed when `theirs` differs from `base` in a way
`ours` does not already show:

- the objective and the document's title are scalars: `theirs` changed and `ours`
  kept the base value → a clean change; both changed, differently → a conflict;
- preferences and todos are matched by `uid` and merged field by field (text,
  locked / done, depth, and the position among the items both sides kept). An item
  only `theirs` has is added, unless the target rejected it; an item `theirs`
  removed and `ours` left alone is removed (the apply keeps it as a rejected
  decision); an item one side removed and the other changed is a conflict;
- artifacts are matched by `uid` (every copy keeps it): one only `theirs` has is
  added (copied with its uid); one both sides hold with different content (kind,
  title, body: `artifact_key`) is a change if only `theirs` changed it since `base`,
  and a conflict if `ours` changed it too (or there is no base to tell);
- the document body merges three ways by line with `merge3`: a hunk only `theirs`
  changed is a clean change, a hunk both changed differently is a conflict of its
  own, and everything else keeps `ours`.

`result.merge_result` then builds the target's new workspace from the plan and the
resolutions (`result.py`). Nothing here reads or writes storage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from functools import lru_cache
from typing import Any, Literal, cast

from merge3 import Merge3
from patiencediff import PatienceSequenceMatcher

Surface = Literal["objective", "title", "document", "preference", "todo", "artifact"]
ChangeKind = Literal["add", "remove", "change"]


@dataclass(frozen=True)
class Lines:
    """A document hunk settled line by line: the hunk becomes exactly these lines, each
    named by its side and its index among that side's lines of the hunk."""

    picked: tuple[tuple[Literal["ours", "theirs"], int], ...]


# `both` keeps a document hunk as the target has it, then as the source has it; `Lines`
# keeps the lines chosen from either side.
Resolution = Literal["ours", "theirs", "both"] | Lines
Value = str | dict[str, Any] | None

PREFERENCE_FIELDS = ("text", "locked")
TODO_FIELDS = ("text", "done", "depth")
POSITION = "position"


@dataclass(frozen=True)
class Item:
    """A preference or a todo: its uid and its fields (`PREFERENCE_FIELDS` or
    `TODO_FIELDS`)."""

    uid: str
    values: Mapping[str, Any]


@dataclass(frozen=True)
class ArtifactRef:
    """An artifact as the merge knows it: its uid (`key`), kind, title, its row on its
    side (to copy its content from) and its content's digest (`artifact_key`)."""

    key: str
    kind: str
    title: str
    row_id: int | None = None
    digest: str = ""


@dataclass(frozen=True)
class Side:
    """One workspace state. No document: `title` and `content` None."""

    objective: str | None = None
    title: str | None = None
    content: str | None = None
    preferences: tuple[Item, ...] = ()
    todos: tuple[Item, ...] = ()
    artifacts: tuple[ArtifactRef, ...] = ()
    rejected: frozenset[str] = frozenset()


EMPTY = Side()


def artifact_key(kind: str, title: str, content: str) -> str:
    """The digest of an artifact's content (kind, title and body): two copies of one
    uid with different digests differ. Artifacts made before uids existed were given
    this digest as their uid."""
    digest = hashlib.sha256(f"{kind}\x00{title}\x00{content}".encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class Change:
    """One listed change. `fields` names what differs (items, artifacts), `clashes`
    which of an item's fields are in conflict; `hunk` is the index of a document
    change's region (see `_regions`)."""

    id: str
    surface: Surface
    uid: str | None
    kind: ChangeKind
    base: Value
    ours: Value
    theirs: Value
    conflict: bool
    fields: tuple[str, ...] = ()
    hunk: int | None = None
    # An item's fields both sides changed differently: each can be settled on its own.
    clashes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Region:
    """A stretch of the document: `unchanged`, `same` (both made the same change),
    `ours` or `theirs` (only that side changed it) or `conflict`."""

    kind: Literal["unchanged", "same", "ours", "theirs", "conflict"]
    base: tuple[str, ...]
    ours: tuple[str, ...]
    theirs: tuple[str, ...]


@dataclass(frozen=True)
class Plan:
    changes: tuple[Change, ...]
    regions: tuple[Region, ...] = ()


# ---- planning ----


def plan(base: Side, ours: Side, theirs: Side) -> Plan:
    """Every change `theirs` would bring into `ours`, conflicts first (see the module
    doc); a change `ours` already has is not listed."""
    changes: list[Change] = []
    for surface, b, o, t in (
        ("objective", base.objective, ours.objective, theirs.objective),
        ("title", base.title, ours.title, theirs.title),
    ):
        change = _scalar(surface, b, o, t)  # type: ignore[arg-type]
        if change is not None:
            changes.append(change)
    regions, document = _document(base.content or "", ours.content or "", theirs.content or "")
    changes += document
    changes += _items("preference", PREFERENCE_FIELDS, base.preferences, ours, theirs.preferences)
    changes += _items("todo", TODO_FIELDS, base.todos, ours, theirs.todos)
    changes += _artifacts(base, ours, theirs)
    # Conflicts first, each group in the order above (stable sort).
    changes.sort(key=lambda c: not c.conflict)
    return Plan(tuple(changes), regions)


def _kind(base: object, theirs: object) -> ChangeKind:
    if base is None:
        return "add"
    return "remove" if theirs is None else "change"


def _scalar(
    surface: Surface, base: str | None, ours: str | None, theirs: str | None
) -> Change | None:
    if theirs in (base, ours):
        return None
    return Change(
        id=surface,
        surface=surface,
        uid=None,
        kind=_kind(base, theirs),
        base=base,
        ours=ours,
        theirs=theirs,
        conflict=ours != base,
    )


@lru_cache(maxsize=4)
def _document(base: str, ours: str, theirs: str) -> tuple[tuple[Region, ...], tuple[Change, ...]]:
    """The document's regions and changes, kept for the last few triples of texts: a
    preview and the apply that follows it plan the same three documents, and the line
    matching is most of a plan's time (the key is the texts themselves, compared in
    full on a hit; the values are frozen)."""
    regions = _regions(base, ours, theirs)
    return tuple(regions), tuple(_document_changes(regions))


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _regions(base: str, ours: str, theirs: str) -> list[Region]:
    """The document cut into regions along `merge3`'s sync regions (the stretches of
    the base that both sides kept), lines matched by patience diff (its C matcher)."""
    b, o, t = _lines(base), _lines(ours), _lines(theirs)
    out: list[Region] = []
    ib = io = it = 0
    # patiencediff's stubs type it as difflib's class, which merge3's protocol (typed
    # for the constructor merge3 calls) does not accept; it is that protocol at run time.
    matcher = cast(Any, PatienceSequenceMatcher)
    merge = Merge3(b, o, t, sequence_matcher=matcher)
    for zmatch, zend, omatch, oend, tmatch, tend in merge.find_sync_regions():
        if omatch > io or tmatch > it:
            rb, ro, rt = tuple(b[ib:zmatch]), tuple(o[io:omatch]), tuple(t[it:tmatch])
            if ro == rt:
                kind: Any = "same"
            elif ro == rb:
                kind = "theirs"
            elif rt == rb:
                kind = "ours"
            else:
                kind = "conflict"
            out.append(Region(kind, rb, ro, rt))
        io, it, ib = omatch, tmatch, zmatch
        if zend > zmatch:
            kept = tuple(b[zmatch:zend])
            out.append(Region("unchanged", kept, kept, kept))
            ib, io, it = zend, oend, tend
    return out


def _document_changes(regions: list[Region]) -> list[Change]:
    changes: list[Change] = []
    for i, r in enumerate(regions):
        if r.kind not in ("theirs", "conflict"):
            continue
        base, ours, theirs = "".join(r.base), "".join(r.ours), "".join(r.theirs)
        changes.append(
            Change(
                id=f"document:{len(changes) + 1}",
                surface="document",
                uid=None,
                kind="add" if not base else "remove" if not theirs else "change",
                base=base,
                ours=ours,
                theirs=theirs,
                conflict=r.kind == "conflict",
                hunk=i,
            )
        )
    return changes


def _moved(base: Sequence[Item], side: Sequence[Item]) -> dict[str, str | None]:
    """The items `side` moved, among those both it and `base` have: the fewest that
    leave the others in the base's order (outside a longest common subsequence), each
    with its new predecessor among the common items (None: first)."""
    both = {i.uid for i in base} & {i.uid for i in side}
    a = [i.uid for i in base if i.uid in both]
    b = [i.uid for i in side if i.uid in both]
    if a == b:  # nothing moved (the usual case): no matching needed
        return {}
    kept: set[str] = set()
    for block in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks():
        kept.update(b[block.b : block.b + block.size])
    return {uid: (b[n - 1] if n else None) for n, uid in enumerate(b) if uid not in kept}


def _value(item: Item | None, index: Mapping[str, int]) -> dict[str, Any] | None:
    if item is None:
        return None
    return {**item.values, POSITION: index[item.uid]}


def _items(
    surface: Literal["preference", "todo"],
    fields: tuple[str, ...],
    base_items: tuple[Item, ...],
    ours_side: Side,
    theirs_items: tuple[Item, ...],
) -> list[Change]:
    ours_items = ours_side.preferences if surface == "preference" else ours_side.todos
    base = {i.uid: i for i in base_items}
    ours = {i.uid: i for i in ours_items}
    theirs = {i.uid: i for i in theirs_items}
    where = {
        side: {i.uid: n for n, i in enumerate(items)}
        for side, items in (("b", base_items), ("o", ours_items), ("t", theirs_items))
    }
    # Positions are compared among the items a side kept from the base.
    theirs_moved = _moved(base_items, theirs_items)
    ours_moved = _moved(base_items, ours_items)

    def change(
        uid: str,
        kind: ChangeKind,
        conflict: bool,
        changed: tuple[str, ...],
        clashes: tuple[str, ...] = (),
    ) -> Change:
        return Change(
            id=f"{surface}:{uid}",
            surface=surface,
            uid=uid,
            kind=kind,
            base=_value(base.get(uid), where["b"]),
            ours=_value(ours.get(uid), where["o"]),
            theirs=_value(theirs.get(uid), where["t"]),
            conflict=conflict,
            fields=changed,
            clashes=clashes,
        )

    changes: list[Change] = []
    for t in theirs_items:
        uid = t.uid
        b, o = base.get(uid), ours.get(uid)
        if b is None:
            if o is None:
                if uid not in ours_side.rejected:
                    changes.append(change(uid, "add", False, ()))
            elif o.values != t.values:
                # Both have it and neither got it from the base: no way to tell whose
                # edit is newer.
                differ = tuple(f for f in fields if o.values.get(f) != t.values.get(f))
                changes.append(change(uid, "change", True, differ, differ))
            continue
        if o is None:
            if t.values != b.values:  # the target removed what the source changed
                differ = tuple(f for f in fields if b.values.get(f) != t.values.get(f))
                changes.append(change(uid, "change", True, differ))
            continue
        if uid not in theirs_moved and t.values in (b.values, o.values):
            continue  # (the fields' loop below would find nothing: the common case)
        taken: list[str] = []
        clashes: list[str] = []
        for f in fields:
            bv, ov, tv = b.values.get(f), o.values.get(f), t.values.get(f)
            if tv in (bv, ov):
                continue
            (taken if ov == bv else clashes).append(f)
        if uid in theirs_moved:
            if uid not in ours_moved:
                taken.append(POSITION)
            elif ours_moved[uid] != theirs_moved[uid]:
                clashes.append(POSITION)
        if taken or clashes:
            changes.append(change(uid, "change", bool(clashes), (*taken, *clashes), tuple(clashes)))
    for b in base_items:
        if b.uid in theirs or b.uid not in ours:
            continue
        o = ours[b.uid]
        changes.append(change(b.uid, "remove", o.values != b.values, ()))
    return changes


def _artifacts(base: Side, ours: Side, theirs: Side) -> list[Change]:
    def view(a: ArtifactRef) -> dict[str, Any]:
        return {"title": a.title, "kind": a.kind, "digest": a.digest}

    in_base = {a.key: a for a in base.artifacts}
    in_ours = {a.key: a for a in ours.artifacts}
    seen: set[str] = set()
    changes = []
    for a in theirs.artifacts:
        if a.key in seen:
            continue
        seen.add(a.key)
        b, o = in_base.get(a.key), in_ours.get(a.key)
        if o is None:
            if b is not None:
                continue  # the target no longer has it: not brought back
            kind: ChangeKind = "add"
            conflict = False
        elif o.digest == a.digest or (b is not None and b.digest == a.digest):
            continue  # the target has it as it is, or only the target changed it
        else:
            kind = "change"
            conflict = b is None or b.digest != o.digest
        theirs_view = view(a)
        fields = () if o is None else tuple(k for k, v in view(o).items() if v != theirs_view[k])
        changes.append(
            Change(
                id=f"artifact:{a.key}",
                surface="artifact",
                uid=a.key,
                kind=kind,
                base=None if b is None else view(b),
                ours=None if o is None else view(o),
                theirs=theirs_view,
                conflict=conflict,
                fields=fields,
            )
        )
    return changes
