"""The upstream 0.7.0 `chat` reducer fixtures against `app.ahp.reducer`, converted to
the RFC as `../shared/ahp/README.md` says: `turns` (initial and expected) become a
record keyed by id. The fixtures about `chat/truncated` and the array-shaped
`chat/turnsLoaded` are not collected at all: the RFC replaces those actions (by
`chat/historyCheckedOut`, `chat/turnsPruned` and a record-keyed `chat/turnsLoaded`,
covered in `test_reducer_dag.py`). Every other chat fixture runs, none is skipped."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from app.ahp.reducer import reduce_chat
from tests.ahp.wire import SHARED

FIXTURES = sorted((SHARED / "0.7.0" / "test-cases" / "reducers").glob("*.json"))
REPLACED = {"chat/truncated", "chat/turnsLoaded"}
# How many 0.7.0 chat fixtures use a replaced action: if the vendored set changes,
# this fails instead of silently running fewer (or more) fixtures.
REPLACED_FIXTURES = 11


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
    params, replaced = [], 0
    for path in FIXTURES:
        case = json.loads(path.read_text())
        if case["reducer"] != "chat":
            continue
        if {a["type"] for a in case["actions"]} & REPLACED:
            replaced += 1  # the RFC replaces these actions: not a case for this reducer
            continue
        params.append(pytest.param(path, id=path.stem[:60]))
    assert replaced == REPLACED_FIXTURES, f"{replaced} fixtures use replaced actions"
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
