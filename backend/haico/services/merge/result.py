"""The result of a merge plan: the target's new workspace, from the plan and the
resolutions (`ours` keeps the target's value, `theirs` takes the source's, `both` —
a document hunk only — keeps the target's lines followed by the source's, `Lines` —
a document hunk too — exactly the lines chosen from either side, in order; every
conflict needs one, any other change may be declined), and what the merge node says
it brought. Pure, as the planner is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from itertools import chain
from typing import Literal

from haico.services.merge.plan import POSITION, Change, Item, Lines, Plan, Resolution, Side


class Unresolved(Exception):
    """Conflicts that no resolution settles (their change ids in `args[0]`)."""


class UnknownChange(Exception):
    """A resolution names a change the plan does not list (its id in `args[0]`)."""


class NotBoth(Exception):
    """`both` or a line pick given for something other than a document hunk (its keys
    in `args[0]`)."""


class BadLines(Exception):
    """A line pick names a line its hunk does not have, or one line twice (the change
    id and what is wrong in `args`)."""


@dataclass
class Result:
    """The target's workspace after the merge, and the changes brought in."""

    side: Side
    brought: list[Change] = field(default_factory=list)
    removed: list[Item] = field(default_factory=list)
    removed_surface: dict[str, str] = field(default_factory=dict)


# A resolution of one field of an item change: `<change id>.<field>`.
FIELD_SEPARATOR = "."


def _field_choices(
    plan: Plan, resolutions: Mapping[str, Resolution]
) -> tuple[dict[str, Resolution], dict[str, dict[str, Resolution]]]:
    """The resolutions split into whole changes and fields of item changes (an item the
    target still has, the field one that differs). Raises `UnknownChange`."""
    by_id = {c.id: c for c in plan.changes}
    whole: dict[str, Resolution] = {}
    fields: dict[str, dict[str, Resolution]] = {}
    unknown: list[str] = []
    not_both = sorted(
        key
        for key, choice in resolutions.items()
        if (choice == "both" or isinstance(choice, Lines))
        and (key not in by_id or by_id[key].surface != "document")
    )
    if not_both:
        raise NotBoth(not_both)
    for key, choice in resolutions.items():
        if key in by_id:
            whole[key] = choice
            continue
        change_id, sep, name = key.rpartition(FIELD_SEPARATOR)
        c = by_id.get(change_id)
        if (
            not sep
            or c is None
            or c.surface not in ("preference", "todo")
            or c.kind != "change"
            or c.ours is None
            or name not in c.fields
        ):
            unknown.append(key)
            continue
        fields.setdefault(change_id, {})[name] = choice
    if unknown:
        raise UnknownChange(sorted(unknown))
    return whole, fields


def taken(plan: Plan, resolutions: Mapping[str, Resolution]) -> list[Change]:
    """The changes the merge brings in: clean ones unless resolved `ours`, conflicts
    resolved `theirs`. An item change may be settled field by field
    (`<change id>.<field>`): a conflict is settled by a resolution of the whole change
    or of each field in conflict; a field not named follows the whole change's
    resolution, else `theirs` (a clean field). The change brought then names only the
    fields taken from the source. A document hunk resolved `both` or by a line pick
    is brought (both sides' lines, or the lines picked). Raises `UnknownChange`,
    `NotBoth` and `Unresolved`."""
    whole, fields = _field_choices(plan, resolutions)
    open_conflicts: list[str] = []
    brought: list[Change] = []
    for c in plan.changes:
        chosen = fields.get(c.id, {})
        default = whole.get(c.id)
        settled = bool(c.clashes) and all(f in chosen for f in c.clashes)
        if c.conflict and default is None and not settled:
            open_conflicts.append(c.id)
            continue
        if chosen:
            picked = tuple(f for f in c.fields if chosen.get(f, default or "theirs") == "theirs")
            if picked:
                brought.append(replace(c, fields=picked))
        elif default is None or isinstance(default, Lines) or default in ("theirs", "both"):
            brought.append(c)
    if open_conflicts:
        raise Unresolved(open_conflicts)
    return brought


def _lines(ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """A hunk kept on both sides: the target's lines, then the source's; a last line
    without its line break gets one, so the two never run together."""
    first = list(ours)
    if first and not first[-1].endswith("\n") and theirs:
        first[-1] += "\n"
    return first + list(theirs)


def _picked(change_id: str, pick: Lines, ours: Sequence[str], theirs: Sequence[str]) -> list[str]:
    """The lines a pick names, in its order; a line without its line break (the last
    of a side) gets one when another follows. Raises `BadLines`."""
    seen: set[tuple[str, int]] = set()
    out: list[str] = []
    for side, n in pick.picked:
        lines = ours if side == "ours" else theirs
        if n >= len(lines):
            raise BadLines(change_id, f"{side} has {len(lines)} line(s) in that hunk, not {n + 1}")
        if (side, n) in seen:
            raise BadLines(change_id, f"{side} line {n + 1} is picked twice")
        seen.add((side, n))
        if out and not out[-1].endswith("\n"):
            out[-1] += "\n"
        out.append(lines[n])
    return out


def merge_result(
    plan: Plan, ours: Side, theirs: Side, resolutions: Mapping[str, Resolution]
) -> Result:
    """`ours` with the changes the plan brings in (see `taken`)."""
    brought = taken(plan, resolutions)
    by_surface: dict[str, list[Change]] = {}
    for c in brought:
        by_surface.setdefault(c.surface, []).append(c)
    side = ours
    if "objective" in by_surface:
        side = replace(side, objective=theirs.objective)
    if "title" in by_surface:
        side = replace(side, title=theirs.title)
    hunks = {c.hunk for c in by_surface.get("document", [])}
    both = {c.hunk for c in by_surface.get("document", []) if resolutions.get(c.id) == "both"}
    picks = {
        c.hunk: (c.id, pick)
        for c in by_surface.get("document", [])
        if isinstance(pick := resolutions.get(c.id), Lines)
    }
    if hunks:

        def region(i: int, ours_lines: Sequence[str], theirs_lines: Sequence[str]) -> list[str]:
            if i in picks:
                return _picked(*picks[i], ours_lines, theirs_lines)
            if i in both:
                return _lines(ours_lines, theirs_lines)
            return list(theirs_lines if i in hunks else ours_lines)

        body = "".join(
            chain.from_iterable(region(i, r.ours, r.theirs) for i, r in enumerate(plan.regions))
        )
        side = replace(side, content=body)
    if side.title is None and side.content:
        side = replace(side, title="")  # a document needs a title, even an empty one
    elif side.title is None:
        side = replace(side, content=None)  # no title and no text: no document
    result = Result(side, brought)
    surfaces: tuple[Literal["preference", "todo"], ...] = ("preference", "todo")
    for surface in surfaces:
        changes = by_surface.get(surface, [])
        if changes:
            result = _merge_items(result, surface, changes, ours, theirs)
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
        change = next((c for c in changes if c.uid == t.uid and c.kind != "remove"), None)
        if change is None:
            continue
        current = next((i for i in items if i.uid == t.uid), None)
        if current is None:
            put(theirs_by_uid[t.uid])
            continue
        values = dict(current.values)
        for f in change.fields:
            if f != POSITION:
                values[f] = t.values.get(f)
        updated = Item(t.uid, values)
        if POSITION in change.fields:
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
    parts: list[str] = [s for s in ("objective", "title") if s in counts]
    if "document" in counts:
        hunks = counts["document"]
        parts.append("document" if hunks == 1 else f"document ({hunks} hunks)")
    parts += [_count(counts[s], s) for s in ("preference", "todo", "artifact") if s in counts]
    return ", ".join(parts)
