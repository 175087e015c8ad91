"""The reducer on the DAG extension's actions that replace `chat/truncated` and the array-shaped
`chat/turnsLoaded`: a record-keyed `chat/turnsLoaded`, `chat/historyCheckedOut` and
`chat/turnsPruned` (the upstream fixtures cover neither)."""

from __future__ import annotations

from typing import Any

from haico.ahp.reducer import reduce_chat, selected_path

Json = dict[str, Any]
NOW = "1970-01-01T00:00:09.999Z"


def turn(turn_id: str, parent: str | None = None, text: str = "") -> Json:
    out: Json = {
        "id": turn_id,
        "message": {"text": text or turn_id, "origin": {"kind": "user"}},
        "responseParts": [],
        "state": "complete",
    }
    if parent:
        out["parentTurnId"] = parent
    return out


def chat(*turns: Json, head: str | None = None, **extra: Any) -> Json:
    state: Json = {"resource": "ahp-chat:/x", "title": "t", "status": 1, "modifiedAt": "0"}
    state["turns"] = {t["id"]: t for t in turns}
    if head:
        state["headTurnId"] = head
    return state | extra


def apply(state: Json, *actions: Json) -> Json:
    for action in actions:
        state = reduce_chat(state, action, now=lambda: NOW)
    return state


def test_turns_loaded_merges_a_record_and_keeps_the_cursor_rule() -> None:
    start = chat(turn("c", "b"), head="c", turnsNextCursor="page-1")
    older = {"type": "chat/turnsLoaded", "turns": {"b": turn("b", "a")}, "turnsNextCursor": "p2"}
    state = apply(start, older)
    assert set(state["turns"]) == {"b", "c"}
    assert state["turnsNextCursor"] == "p2"
    assert selected_path(state) == ["b", "c"]
    # The last page reaches a root-level turn: the cursor is gone.
    state = apply(state, {"type": "chat/turnsLoaded", "turns": {"a": turn("a")}})
    assert "turnsNextCursor" not in state
    assert selected_path(state) == ["a", "b", "c"]
    # Loading a turn again replaces it (newer content wins), nothing is duplicated.
    state = apply(state, {"type": "chat/turnsLoaded", "turns": {"a": turn("a", text="new")}})
    assert state["turns"]["a"]["message"]["text"] == "new"
    assert len(state["turns"]) == 3
    assert start["turns"].keys() == {"c"}  # the input state is not modified


def test_turns_loaded_children_of_a_node_do_not_move_the_head() -> None:
    state = chat(turn("a"), turn("b", "a"), head="b")
    kids = {"type": "chat/turnsLoaded", "turns": {"b2": turn("b2", "a"), "b3": turn("b3", "a")}}
    state = apply(state, kids)
    assert state["headTurnId"] == "b"
    assert selected_path(state) == ["a", "b"]
    assert {t for t, v in state["turns"].items() if v.get("parentTurnId") == "a"} == {
        "b",
        "b2",
        "b3",
    }


def test_history_checked_out_moves_the_head_and_a_send_branches() -> None:
    state = chat(turn("a"), turn("b", "a"), head="b")
    state = apply(state, {"type": "chat/historyCheckedOut", "headTurnId": "a"})
    assert state["headTurnId"] == "a" and "b" in state["turns"]
    assert selected_path(state) == ["a"]
    started = {
        "type": "chat/turnStarted",
        "turnId": "c",
        "parentTurnId": "a",
        "startedAt": "1",
        "message": {"text": "branch", "origin": {"kind": "user"}},
    }
    state = apply(state, started)
    assert state["activeTurn"]["parentTurnId"] == "a" and state["status"] == 8
    state = apply(state, {"type": "chat/turnComplete", "turnId": "c", "duration": 5})
    assert state["headTurnId"] == "c"
    assert state["turns"]["c"]["parentTurnId"] == "a"
    assert selected_path(state) == ["a", "c"]
    assert state["status"] == 1 and state["modifiedAt"] == NOW
    # Checking out "before the first turn" clears the head.
    state = apply(state, {"type": "chat/historyCheckedOut"})
    assert "headTurnId" not in state and selected_path(state) == []


def test_turns_pruned_drops_turns_and_only_those() -> None:
    state = chat(turn("a"), turn("b", "a"), turn("c", "a"), head="c")
    state = apply(state, {"type": "chat/turnsPruned", "turnIds": ["b", "unknown"]})
    assert set(state["turns"]) == {"a", "c"}
    assert state["headTurnId"] == "c" and selected_path(state) == ["a", "c"]
    # A linear continuation after a checkout: the abandoned future goes in one action.
    state = apply(
        state,
        {"type": "chat/historyCheckedOut", "headTurnId": "a"},
        {"type": "chat/turnsPruned", "turnIds": ["c"]},
    )
    assert set(state["turns"]) == {"a"} and state["headTurnId"] == "a"


def test_a_pre_dag_snapshot_with_a_turn_list_is_converted_on_load() -> None:
    state = {"turns": [turn("a")], "status": 1}
    state = apply(state, {"type": "chat/turnsLoaded", "turns": {"z": turn("z")}})
    assert set(state["turns"]) == {"a", "z"}
