"""The net workspace change of a branch: its workspace after its last turn against the
workspace it started from (the state after its branch point).

A pure comparison by content, not by item identity: two sibling branches that each
added a todo "draft intro" made the same change although their todos have different
`uid`s. Summaries describe it, and pruning suggestions compare it between siblings.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from haico.services.workspace.state import WorkspaceState

_Items = tuple[tuple[object, ...], ...]


_Bag = Counter[tuple[object, ...]]


def _minus(a: _Bag, b: _Bag) -> _Items:
    return tuple(sorted((a - b).elements(), key=repr))


@dataclass(frozen=True)
class NetChange:
    objective: tuple[str | None, str | None] | None
    document: tuple[str, str] | None  # (title, body) after, when it changed
    preferences_added: _Items
    preferences_removed: _Items
    todos_added: _Items
    todos_removed: _Items
    artifacts_added: tuple[str, ...]

    @classmethod
    def between(cls, start: WorkspaceState, end: WorkspaceState) -> NetChange:
        prefs_a: _Bag = Counter((p.text, p.locked) for p in start.preferences)
        prefs_b: _Bag = Counter((p.text, p.locked) for p in end.preferences)
        todos_a: _Bag = Counter((t.text, t.done, t.depth) for t in start.todos)
        todos_b: _Bag = Counter((t.text, t.done, t.depth) for t in end.todos)
        arts_a = Counter(a.title for a in start.artifacts)
        arts_b = Counter(a.title for a in end.artifacts)
        doc_a = (start.document.title, start.document.content) if start.document else ("", "")
        doc_b = (end.document.title, end.document.content) if end.document else ("", "")
        return cls(
            objective=(start.objective, end.objective)
            if (start.objective or None) != (end.objective or None)
            else None,
            document=doc_b if doc_a != doc_b else None,
            preferences_added=_minus(prefs_b, prefs_a),
            preferences_removed=_minus(prefs_a, prefs_b),
            todos_added=_minus(todos_b, todos_a),
            todos_removed=_minus(todos_a, todos_b),
            artifacts_added=tuple(sorted((arts_b - arts_a).elements())),
        )

    @property
    def empty(self) -> bool:
        return not self.parts()

    def parts(self) -> list[str]:
        """What changed, in words, one entry per surface ("objective “…”", "+2 todos")."""
        out: list[str] = []
        if self.objective is not None:
            after = self.objective[1]
            out.append(f"objective “{_clip(after, 40)}”" if after else "objective cleared")
        if self.document is not None:
            out.append("document edited")
        for label, added, removed in (
            ("preference", self.preferences_added, self.preferences_removed),
            ("todo", self.todos_added, self.todos_removed),
        ):
            if added:
                out.append(f"+{len(added)} {_plural(label, len(added))}")
            if removed:
                out.append(f"−{len(removed)} {_plural(label, len(removed))}")
        if self.artifacts_added:
            n = len(self.artifacts_added)
            out.append(f"+{n} {_plural('artifact', n)}")
        return out


def _plural(word: str, n: int) -> str:
    return word if n == 1 else word + "s"


def _clip(text: str, chars: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"


def clip(text: str, chars: int) -> str:
    """`text` on one line, cut to `chars` characters with an ellipsis."""
    return _clip(text, chars)
