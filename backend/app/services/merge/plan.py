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
- artifacts are immutable: one `theirs` made that neither `base` nor `ours` has is
  added (artifacts are known by a content key, see `artifact_key`);
- the document body merges three ways by line with `merge3`: a hunk only `theirs`
  changed is a clean change, a hunk both changed differently is a conflict of its
  own, and everything else keeps `ours`.

`merge_result` then builds the target's new workspace from the plan and the
resolutions (`ours` keeps the target's value, `theirs` takes the source's; a
conflict needs one). Nothing here reads or writes storage.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from difflib import SequenceMatcher
from typing import Any, Literal

from merge3 import Merge3

Surface = Literal["objective", "title", "document", "preference", "todo", "artifact"]
ChangeKind = Literal["add", "remove", "change"]
Resolution = Literal["ours", "theirs"]
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
    """An artifact as the merge knows it: its content key, kind, title and its row on
    its side (to copy its content from)."""

    key: str
    kind: str
    title: str
    row_id: int | None = None


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
    """An artifact's identity across copies: copies keep kind, title and content (and
    get new rows and, when brought in by a merge, a new turn)."""
    digest = hashlib.sha256(f"{kind}\x00{title}\x00{content}".encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True)
class Change:
    """One listed change. `fields` names what differs (items); `hunk` is the index of a
    document change's region (see `_regions`)."""

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

    @property
    def conflicts(self) -> tuple[Change, ...]:
        return tuple(c for c in self.changes if c.conflict)


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
    regions = _regions(base.content or "", ours.content or "", theirs.content or "")
    changes += _document_changes(regions)
    changes += _items("preference", PREFERENCE_FIELDS, base.preferences, ours, theirs.preferences)
    changes += _items("todo", TODO_FIELDS, base.todos, ours, theirs.todos)
    changes += _artifacts(base, ours, theirs)
    # Conflicts first, each group in the order above (stable sort).
    changes.sort(key=lambda c: not c.conflict)
    return Plan(tuple(changes), tuple(regions))


def _kind(base: object, theirs: object) -> ChangeKind:
    if base is None:
        return "add"
    return "remove" if theirs is None else "change"


def _scalar(surface: Surface, base: str | None, ours: str | None, theirs: str | None) -> Change | None:
    if theirs == base or theirs == ours:
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


def _lines(text: str) -> list[str]:
    return text.splitlines(keepends=True)


def _regions(base: str, ours: str, theirs: str) -> list[Region]:
    """The document cut into regions along `merge3`'s sync regions (the stretches of
    the base that both sides kept)."""
    b, o, t = _lines(base), _lines(ours), _lines(theirs)
    out: list[Region] = []
    ib = io = it = 0
    for zmatch, zend, omatch, oend, tmatch, tend in Merge3(b, o, t).find_sync_regions():
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
    changes = []
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

    def change(uid: str, kind: ChangeKind, conflict: bool, changed: tuple[str, ...]) -> Change:
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
                changes.append(change(uid, "change", True, differ))
            continue
        if o is None:
            if t.values != b.values:  # the target removed what the source changed
                differ = tuple(f for f in fields if b.values.get(f) != t.values.get(f))
                changes.append(change(uid, "change", True, differ))
            continue
        taken: list[str] = []
        clashes: list[str] = []
        for f in fields:
            bv, ov, tv = b.values.get(f), o.values.get(f), t.values.get(f)
            if tv == bv or tv == ov:
                continue
            (taken if ov == bv else clashes).append(f)
        if uid in theirs_moved:
            if uid not in ours_moved:
                taken.append(POSITION)
            elif ours_moved[uid] != theirs_moved[uid]:
                clashes.append(POSITION)
        if taken or clashes:
            changes.append(change(uid, "change", bool(clashes), (*taken, *clashes)))
    for b in base_items:
        if b.uid in theirs or b.uid not in ours:
            continue
        o = ours[b.uid]
        changes.append(change(b.uid, "remove", o.values != b.values, ()))
    return changes


def _artifacts(base: Side, ours: Side, theirs: Side) -> list[Change]:
    known = {a.key for a in base.artifacts} | {a.key for a in ours.artifacts}
    changes = []
    for a in theirs.artifacts:
        if a.key in known:
            continue
        known.add(a.key)
        changes.append(
            Change(
                id=f"artifact:{a.key}",
                surface="artifact",
                uid=a.key,
                kind="add",
                base=None,
                ours=None,
                theirs={"title": a.title, "kind": a.kind},
                conflict=False,
            )
        )
    return changes


# ---- the result ----


class Unresolved(Exception):
    """Conflicts that no resolution settles (their change ids in `args[0]`)."""


class UnknownChange(Exception):
    """A resolution names a change the plan does not list (its id in `args[0]`)."""


@dataclass
class Result:
    """The target's workspace after the merge, and the changes brought in."""

    side: Side
    brought: list[Change] = field(default_factory=list)
    removed: list[Item] = field(default_factory=list)
    removed_surface: dict[str, str] = field(default_factory=dict)


def taken(plan: Plan, resolutions: Mapping[str, Resolution]) -> list[Change]:
    """The changes the merge brings in: clean ones unless resolved `ours`, conflicts
    resolved `theirs`. Raises `UnknownChange` and `Unresolved`."""
    ids = {c.id for c in plan.changes}
    unknown = sorted(set(resolutions) - ids)
    if unknown:
        raise UnknownChange(unknown)
    open_conflicts = [c.id for c in plan.conflicts if c.id not in resolutions]
    if open_conflicts:
        raise Unresolved(open_conflicts)
    return [c for c in plan.changes if resolutions.get(c.id, "theirs") == "theirs"]


def merge_result(
    plan: Plan, ours: Side, theirs: Side, resolutions: Mapping[str, Resolution]
) -> Result:
    """`ours` with the changes the plan brings in (see `taken`)."""
    brought = taken(plan, resolutions)
    by_surface: dict[str, list[Change]] = {}
    for c in brought:
        by_surface.setdefault(c.surface, []).append(c)
    side = ours
    for c in by_surface.get("objective", []):
        side = replace(side, objective=theirs.objective)
    for c in by_surface.get("title", []):
        side = replace(side, title=theirs.title)
    hunks = {c.hunk for c in by_surface.get("document", [])}
    if hunks:
        body = "".join(
            "".join(r.theirs if i in hunks else r.ours) for i, r in enumerate(plan.regions)
        )
        side = replace(side, content=body)
    if side.title is None and side.content:
        side = replace(side, title="")  # a document needs a title, even an empty one
    elif side.title is None:
        side = replace(side, content=None)  # no title and no text: no document
    result = Result(side, brought)
    for surface in ("preference", "todo"):
        changes = by_surface.get(surface, [])
        if changes:
            result = _merge_items(result, surface, changes, ours, theirs)  # type: ignore[arg-type]
    arts = [a for a in theirs.artifacts if f"artifact:{a.key}" in {c.id for c in brought}]
    if arts:
        result.side = replace(result.side, artifacts=(*result.side.artifacts, *arts))
    return result


def _merge_items(
    result: Result,
    surface: Literal["preference", "todo"],
    changes: list[Change],
    ours: Side,
    theirs: Side,
) -> Result:
    ours_items = ours.preferences if surface == "preference" else ours.todos
    theirs_items = theirs.preferences if surface == "preference" else theirs.todos
    theirs_by_uid = {i.uid: i for i in theirs_items}
    items: list[Item] = list(ours_items)
    for c in changes:
        if c.kind == "remove":
            gone = next(i for i in items if i.uid == c.uid)
            items.remove(gone)
            result.removed.append(gone)
            result.removed_surface[gone.uid] = surface
    placed = {i.uid for i in items}

    order = [i.uid for i in theirs_items]

    def put(item: Item) -> None:
        """Insert after its nearest predecessor in `theirs` that is placed already, and
        after the target's own items that follow it (`theirs` does not have them)."""
        at = 0
        for uid in reversed(order[: order.index(item.uid)]):
            if uid in placed:
                at = next(n for n, i in enumerate(items) if i.uid == uid) + 1
                while at < len(items) and items[at].uid not in theirs_by_uid:
                    at += 1
                break
        items.insert(at, item)
        placed.add(item.uid)

    for t in theirs_items:
        c = next((c for c in changes if c.uid == t.uid and c.kind != "remove"), None)
        if c is None:
            continue
        current = next((i for i in items if i.uid == t.uid), None)
        if current is None:
            put(theirs_by_uid[t.uid])
            continue
        values = dict(current.values)
        for f in c.fields:
            if f != POSITION:
                values[f] = t.values.get(f)
        updated = Item(t.uid, values)
        if POSITION in c.fields:
            items.remove(current)
            placed.discard(t.uid)
            put(updated)
        else:
            items[items.index(current)] = updated
    if surface == "preference":
        result.side = replace(result.side, preferences=tuple(items))
    else:
        result.side = replace(result.side, todos=tuple(items))
    return result


# ---- what a merge node says ----


def _count(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def summary(brought: Sequence[Change]) -> str:
    """What was brought, for the node's description: `objective, 2 todos`."""
    counts: dict[str, int] = {}
    for c in brought:
        counts[c.surface] = counts.get(c.surface, 0) + 1
    parts = [s for s in ("objective", "title") if s in counts]
    if "document" in counts:
        hunks = counts["document"]
        parts.append("document" if hunks == 1 else f"document ({hunks} hunks)")
    parts += [_count(counts[s], s) for s in ("preference", "todo", "artifact") if s in counts]
    return ", ".join(parts)
