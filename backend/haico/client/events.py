"""The events of a turn's stream (`POST …/turns`, `text/event-stream`), typed.

In order: `TurnStarted`, then any of `Token`, `ToolCall`, `WorkspaceChanged`, and last
`TurnCompleted` or `TurnFailed`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Literal

from pydantic import BaseModel


class TurnStarted(BaseModel):
    event: Literal["turn_started"] = "turn_started"
    turn_index: int
    node_id: str
    parent_node_id: str | None = None


class Token(BaseModel):
    event: Literal["token"] = "token"
    text: str


class ToolCall(BaseModel):
    event: Literal["tool_call"] = "tool_call"
    name: str
    args: dict[str, Any]


class WorkspaceChanged(BaseModel):
    event: Literal["workspace_changed"] = "workspace_changed"
    surfaces: list[str]


class TurnCompleted(BaseModel):
    event: Literal["turn_completed"] = "turn_completed"
    turn_index: int
    node_id: str
    reply: str


class TurnFailed(BaseModel):
    """The stream's `error` event: the turn ended without completing."""

    event: Literal["error"] = "error"
    code: str
    message: str | None = None


TurnEvent = TurnStarted | Token | ToolCall | WorkspaceChanged | TurnCompleted | TurnFailed

_BY_NAME: dict[str, type[TurnEvent]] = {
    "turn_started": TurnStarted,
    "token": Token,
    "tool_call": ToolCall,
    "workspace_changed": WorkspaceChanged,
    "turn_completed": TurnCompleted,
    "error": TurnFailed,
}


def parse_stream(lines: Iterator[str]) -> Iterator[TurnEvent]:
    """Server-sent events from the stream's lines; unknown event names (a newer server's)
    and comments are passed over."""
    name = "message"
    data: list[str] = []
    for line in lines:
        if line == "":
            if data and name in _BY_NAME:
                yield _BY_NAME[name].model_validate(json.loads("\n".join(data)))
            name, data = "message", []
        elif line.startswith("event:"):
            name = line[6:].strip()
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
    if data and name in _BY_NAME:
        yield _BY_NAME[name].model_validate(json.loads("\n".join(data)))
