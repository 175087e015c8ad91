"""The upstream 0.7.0 `chat` reducer fixtures against `haico.ahp.reducer`, converted to
the "Chats as a DAG" shapes: `turns` (initial and expected) become a record keyed by
id. Of the release's 123 chat fixtures, `vendor/` holds the 112 this reducer runs; the
11 about `chat/truncated` and the array-shaped `chat/turnsLoaded` were left out,
because the extension replaces those actions (by `chat/historyCheckedOut`,
`chat/turnsPruned` and a record-keyed `chat/turnsLoaded`, covered in
`test_reducer_dag.py`). Every vendored fixture runs, none is skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from haico.ahp.reducer import reduce_chat
from tests.ahp.wire import VENDOR

FIXTURES = sorted((VENDOR / "0.7.0" / "test-cases" / "reducers").glob("*.json"))
REPLACED = {"chat/truncated", "chat/turnsLoaded"}
# How many fixtures are vendored: if the set changes, this fails instead of silently
# running fewer (or more) fixtures.
CHAT_FIXTURES = 112


def _strip(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _strip(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_strip(v) for v in value]
    return value


def _record(state: dict[str, Any]) -> dict[str, Any]:
    out = dict(state)
    if isinstance(out.get("turns"), list):
        out["turns"] = {t["id"]: t for t in out["turns"]}
    return out


def _chat_fixtures() -> list[Any]:
    params = []
    for path in FIXTURES:
        case = json.loads(path.read_text())
        kinds = {a["type"] for a in case["actions"]}
        assert case["reducer"] == "chat", f"{path.name}: not a chat fixture"
        assert not kinds & REPLACED, f"{path.name}: uses an action the extension replaces"
        params.append(pytest.param(path, id=path.stem[:60]))
    assert len(params) == CHAT_FIXTURES, f"{len(params)} fixtures vendored, not {CHAT_FIXTURES}"
    return params


@pytest.mark.parametrize("path", _chat_fixtures())
def test_chat_reducer_fixture(path: Path) -> None:
    case = json.loads(path.read_text())
    state = _record(case["initial"])
    ended = None
    for action in case["actions"]:
        before = state.get("activeTurn")
        state = reduce_chat(state, action, now=lambda: "1970-01-01T00:00:09.999Z")
        if before and not state.get("activeTurn"):
            ended = before["id"]
    head = state.pop("headTurnId", None)
    assert head == (ended or case["initial"].get("headTurnId"))
    assert _strip(state) == _strip(_record(case["expected"]))
