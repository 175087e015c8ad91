"""The merge planner on its own (pure, no storage): the matrix per surface — add, remove
and change on each side, the same change on both, conflicts resolved ours and theirs,
a document with clean and overlapping hunks — and properties over random workspaces.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from haico.services.merge.plan import EMPTY, ArtifactRef, Item, Side, artifact_key, plan
from haico.services.merge.result import UnknownChange, Unresolved, merge_result, summary

EXAMPLES = int(os.environ.get("HAICO_FUZZ_EXAMPLES", "12")) * 5


def todo(uid: str, text: str | None = None, *, done: bool = False, depth: int = 0) -> Item:
    return Item(uid, {"text": text or uid, "done": done, "depth": depth})


def pref(uid: str, text: str | None = None, *, locked: bool = False) -> Item:
    return Item(uid, {"text": text or uid, "locked": locked})


def ids(base: Side, ours: Side, theirs: Side) -> list[tuple[str, str, bool]]:
    return [(c.id, c.kind, c.conflict) for c in plan(base, ours, theirs).changes]


def merged(base: Side, ours: Side, theirs: Side, **resolutions: Any) -> Side:
    return merge_result(plan(base, ours, theirs), ours, theirs, resolutions).side


# ---- scalars ----

SCALARS = [
    # (base, ours, theirs) -> listed change, or None
    pytest.param("a", "a", "b", ("change", False), "b", id="theirs-changed"),
    pytest.param("a", "b", "a", None, "b", id="ours-changed"),
    pytest.param("a", "b", "b", None, "b", id="same-change-both"),
    pytest.param("a", "b", "c", ("change", True), None, id="both-changed-differently"),
    pytest.param(None, None, "b", ("add", False), "b", id="theirs-added"),
    pytest.param("a", "a", None, ("remove", False), None, id="theirs-removed"),
]


@pytest.mark.parametrize(("b", "o", "t", "listed", "result"), SCALARS)
def test_the_objective_is_a_scalar(
    b: str | None, o: str | None, t: str | None, listed: tuple[str, bool] | None, result: Any
) -> None:
    base, ours, theirs = Side(objective=b), Side(objective=o), Side(objective=t)
    expected = [] if listed is None else [("objective", *listed)]
    assert ids(base, ours, theirs) == expected
    if listed is not None and listed[1]:
        with pytest.raises(Unresolved):
            merged(base, ours, theirs)
        assert merged(base, ours, theirs, objective="ours").objective == o
        assert merged(base, ours, theirs, objective="theirs").objective == t
    else:
        assert merged(base, ours, theirs).objective == result


def test_the_title_is_a_scalar_of_its_own() -> None:
    base = Side(title="Draft", content="x\n")
    ours = Side(title="Draft", content="x\n")
    theirs = Side(title="Paper", content="x\n")
    assert ids(base, ours, theirs) == [("title", "change", False)]
    assert merged(base, ours, theirs).title == "Paper"


# ---- items ----


def test_an_item_theirs_added_is_added_where_theirs_put_it() -> None:
    base = Side(todos=(todo("a"), todo("c")))
    ours = Side(todos=(todo("a"), todo("c"), todo("z")))
    theirs = Side(todos=(todo("a"), todo("b"), todo("c")))
    assert ids(base, ours, theirs) == [("todo:b", "add", False)]
    assert [t.uid for t in merged(base, ours, theirs).todos] == ["a", "b", "c", "z"]


def test_an_item_ours_added_or_removed_stays_as_ours_has_it() -> None:
    base = Side(preferences=(pref("a"), pref("b")))
    ours = Side(preferences=(pref("a"), pref("new")))  # removed b, added new
    theirs = base
    assert ids(base, ours, theirs) == []


def test_an_item_theirs_removed_is_removed_and_kept_as_rejected() -> None:
    base = Side(todos=(todo("a"), todo("b")))
    ours = base
    theirs = Side(todos=(todo("a"),))
    p = plan(base, ours, theirs)
    assert [(c.id, c.kind, c.conflict) for c in p.changes] == [("todo:b", "remove", False)]
    result = merge_result(p, ours, theirs, {})
    assert [t.uid for t in result.side.todos] == ["a"]
    assert [(i.uid, result.removed_surface[i.uid]) for i in result.removed] == [("b", "todo")]


def test_fields_merge_one_by_one() -> None:
    base = Side(todos=(todo("a", "write"),))
    ours = Side(todos=(todo("a", "write", done=True),))
    theirs = Side(todos=(todo("a", "write it", depth=1),))
    p = plan(base, ours, theirs)
    (change,) = p.changes
    assert (change.kind, change.conflict, change.fields) == ("change", False, ("text", "depth"))
    assert change.base == {"text": "write", "done": False, "depth": 0, "position": 0}
    (a,) = merged(base, ours, theirs).todos
    assert dict(a.values) == {"text": "write it", "done": True, "depth": 1}


def test_the_same_field_changed_both_ways_is_a_conflict_either_side_settles() -> None:
    base = Side(preferences=(pref("p", "short"),))
    ours = Side(preferences=(pref("p", "very short"),))
    theirs = Side(preferences=(pref("p", "brief", locked=True),))
    assert ids(base, ours, theirs) == [("preference:p", "change", True)]
    (change,) = plan(base, ours, theirs).changes
    assert change.fields == ("locked", "text")
    with pytest.raises(Unresolved):
        merged(base, ours, theirs)
    assert merged(base, ours, theirs, **{"preference:p": "ours"}).preferences == ours.preferences
    (p,) = merged(base, ours, theirs, **{"preference:p": "theirs"}).preferences
    assert dict(p.values) == {"text": "brief", "locked": True}


def test_the_same_change_on_both_sides_is_not_listed() -> None:
    base = Side(todos=(todo("a"),))
    same = Side(todos=(todo("a", done=True), todo("b")))
    assert ids(base, same, same) == []


def test_removed_on_one_side_and_changed_on_the_other_is_a_conflict() -> None:
    base = Side(todos=(todo("a"),))
    changed = Side(todos=(todo("a", "a!"),))
    assert ids(base, EMPTY, changed) == [("todo:a", "change", True)]
    assert [t.uid for t in merged(base, EMPTY, changed, **{"todo:a": "theirs"}).todos] == ["a"]
    assert merged(base, EMPTY, changed, **{"todo:a": "ours"}).todos == ()
    assert ids(base, changed, EMPTY) == [("todo:a", "remove", True)]
    assert merged(base, changed, EMPTY, **{"todo:a": "theirs"}).todos == ()


def test_an_item_the_target_rejected_is_not_brought_back() -> None:
    theirs = Side(todos=(todo("a"),))
    ours = Side(rejected=frozenset({"a"}))
    assert ids(EMPTY, ours, theirs) == []


def test_a_move_is_a_position_change() -> None:
    base = Side(todos=(todo("a"), todo("b"), todo("c")))
    theirs = Side(todos=(todo("c"), todo("a"), todo("b")))
    p = plan(base, base, theirs)
    assert [(c.uid, c.fields) for c in p.changes] == [("c", ("position",))]
    assert [t.uid for t in merged(base, base, theirs).todos] == ["c", "a", "b"]
    # Moved elsewhere on both sides: a conflict.
    ours = Side(todos=(todo("a"), todo("c"), todo("b")))
    assert [(c.uid, c.conflict) for c in plan(base, ours, theirs).changes] == [("c", True)]


def test_any_change_may_be_declined_and_unknown_ids_are_refused() -> None:
    theirs = Side(objective="x", todos=(todo("a"),))
    assert [t.uid for t in merged(EMPTY, EMPTY, theirs, **{"todo:a": "ours"}).todos] == []
    with pytest.raises(UnknownChange):
        merged(EMPTY, EMPTY, theirs, **{"todo:zz": "theirs"})


# ---- the document ----

BASE_DOC = "".join(f"line {n}\n" for n in range(1, 11))


def edit(text: str, **lines: str) -> str:
    out = text.splitlines(keepends=True)
    for key, value in lines.items():
        out[int(key.removeprefix("l")) - 1] = value + "\n"
    return "".join(out)


def test_hunks_that_do_not_overlap_merge_cleanly() -> None:
    ours = edit(BASE_DOC, l2="ours 2")
    theirs = edit(BASE_DOC, l8="theirs 8", l9="theirs 9")
    base, o, t = (Side(title="D", content=c) for c in (BASE_DOC, ours, theirs))
    p = plan(base, o, t)
    assert [(c.id, c.kind, c.conflict) for c in p.changes] == [("document:1", "change", False)]
    assert p.changes[0].theirs == "theirs 8\ntheirs 9\n"
    assert p.changes[0].base == "line 8\nline 9\n"
    assert merged(base, o, t).content == edit(BASE_DOC, l2="ours 2", l8="theirs 8", l9="theirs 9")


def test_each_overlapping_hunk_is_its_own_conflict() -> None:
    ours = edit(BASE_DOC, l2="ours 2", l7="ours 7")
    theirs = edit(BASE_DOC, l2="theirs 2", l7="theirs 7", l10="theirs 10")
    base, o, t = (Side(title="D", content=c) for c in (BASE_DOC, ours, theirs))
    assert ids(base, o, t) == [
        ("document:1", "change", True),
        ("document:2", "change", True),
        ("document:3", "change", False),
    ]
    first = plan(base, o, t).changes[0]
    assert (first.base, first.ours, first.theirs) == ("line 2\n", "ours 2\n", "theirs 2\n")
    settled = merged(base, o, t, **{"document:1": "theirs", "document:2": "ours"})
    assert settled.content == edit(BASE_DOC, l2="theirs 2", l7="ours 7", l10="theirs 10")


def test_a_document_only_theirs_has_is_added_whole() -> None:
    theirs = Side(title="Paper", content="one\ntwo\n")
    assert ids(EMPTY, EMPTY, theirs) == [("title", "add", False), ("document:1", "add", False)]
    result = merged(EMPTY, EMPTY, theirs)
    assert (result.title, result.content) == ("Paper", "one\ntwo\n")


# ---- artifacts ----


def test_an_artifact_is_added_once_known_by_its_uid() -> None:
    art = ArtifactRef(artifact_key("text", "Notes", "body"), "text", "Notes", 7)
    copy = ArtifactRef(art.key, "text", "Notes", 99)  # the same artifact in another row
    theirs = Side(artifacts=(art,))
    assert ids(EMPTY, EMPTY, theirs) == [(f"artifact:{art.key}", "add", False)]
    assert ids(EMPTY, Side(artifacts=(copy,)), theirs) == []
    assert merged(EMPTY, EMPTY, theirs).artifacts == (art,)


# ---- order, description ----


def test_conflicts_come_first_and_the_summary_counts_what_came() -> None:
    base = Side(objective="a", todos=(todo("x"),))
    ours = Side(objective="b", todos=(todo("x"),))
    theirs = Side(objective="c", todos=(todo("x"), todo("y"), todo("z")), preferences=(pref("p"),))
    p = plan(base, ours, theirs)
    assert p.changes[0].conflict and not any(c.conflict for c in p.changes[1:])
    result = merge_result(p, ours, theirs, {"objective": "theirs"})
    assert summary(result.brought) == "objective, 1 preference, 2 todos"


# ---- properties ----

texts = st.sampled_from(["a", "b", "c", "d"])
lines = st.lists(st.sampled_from(["x\n", "y\n", "z\n", "w\n"]), max_size=8).map("".join)


@st.composite
def sides(draw: st.DrawFn) -> Side:
    uids = draw(st.lists(st.sampled_from(["u1", "u2", "u3", "u4"]), unique=True, max_size=4))
    title = draw(st.none() | texts)  # no title: no document
    return Side(
        objective=draw(st.none() | texts),
        title=title,
        content=None if title is None else draw(lines),
        todos=tuple(
            todo(u, draw(texts), done=draw(st.booleans()), depth=draw(st.integers(0, 2)))
            for u in uids
        ),
    )


PROPERTY = settings(
    max_examples=EXAMPLES, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
)


@PROPERTY
@given(base=sides(), theirs=sides())
def test_into_an_unchanged_target_a_merge_gives_the_source(base: Side, theirs: Side) -> None:
    p = plan(base, base, theirs)
    assert not [c for c in p.changes if c.conflict]
    result = merge_result(p, base, theirs, {})
    assert result.side.objective == theirs.objective
    assert (result.side.content or "") == (theirs.content or "")
    assert [(t.uid, dict(t.values)) for t in result.side.todos] == [
        (t.uid, dict(t.values)) for t in theirs.todos
    ]


@PROPERTY
@given(base=sides(), ours=sides())
def test_an_unchanged_source_brings_nothing(base: Side, ours: Side) -> None:
    assert plan(base, ours, base).changes == ()


@PROPERTY
@given(base=sides(), ours=sides(), theirs=sides())
def test_merging_the_result_again_brings_nothing(base: Side, ours: Side, theirs: Side) -> None:
    p = plan(base, ours, theirs)
    result = merge_result(p, ours, theirs, {c.id: "theirs" for c in p.changes if c.conflict})
    assert plan(base, result.side, theirs).changes == ()
