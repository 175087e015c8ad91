"""Transcript entries back into LangChain messages (for importing a family).

The inverse of `AgentRuntime.to_transcript`: every user message carries its turn
index, so `prefix_through` cuts the result the same way as a transcript the agent
wrote; a reply keeps its tool calls (ids included) and its state, a tool result its
call id, name and error status.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.messages.tool import ToolCall

from haico.agent.runtime import STATE_KEY, TURN_KEY


def _id() -> str:
    return str(uuid.uuid4())


def from_transcript(entries: Iterable[tuple[int, dict[str, Any]]]) -> list[BaseMessage]:
    """`(turn_index, entry)` pairs, oldest first, as stored messages. An entry has
    `role`, `content` and, as `to_transcript` gives them, `tool_calls`, `state`,
    `name`, `tool_call_id`, `status`."""
    out: list[BaseMessage] = []
    for turn, entry in entries:
        role, content = entry["role"], str(entry.get("content") or "")
        if role == "user":
            out.append(HumanMessage(content=content, id=_id(), additional_kwargs={TURN_KEY: turn}))
        elif role == "assistant":
            extra: dict[str, Any] = {}
            if entry.get("state"):
                extra = {TURN_KEY: turn, STATE_KEY: entry["state"]}
            calls = [
                ToolCall(name=c["name"], args=dict(c.get("args") or {}), id=c.get("id") or _id())
                for c in entry.get("tool_calls") or []
            ]
            out.append(
                AIMessage(content=content, id=_id(), tool_calls=calls, additional_kwargs=extra)
            )
        elif role == "tool":
            out.append(
                ToolMessage(
                    content=content,
                    id=_id(),
                    name=entry.get("name"),
                    tool_call_id=str(entry.get("tool_call_id") or ""),
                    status="error" if entry.get("status") == "error" else "success",
                )
            )
    return out
