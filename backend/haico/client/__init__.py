"""A Python client for HAICO's REST API: `from haico.client import Client, HaicoError`.

    with Client("http://127.0.0.1:8000") as haico:
        conv = haico.create_conversation(title="Essay")
        for event in haico.send(conv.thread_id, "write: a first paragraph"):
            print(event)

It imports none of the server: only httpx, pydantic and the wire models of
`haico.schemas`."""

from haico.client.analysis import AnalysisExport
from haico.client.client import UNSET, Client
from haico.client.errors import HaicoError
from haico.client.events import (
    Token,
    ToolCall,
    TurnCompleted,
    TurnEvent,
    TurnFailed,
    TurnStarted,
    WorkspaceChanged,
)

__all__ = [
    "UNSET",
    "AnalysisExport",
    "Client",
    "HaicoError",
    "Token",
    "ToolCall",
    "TurnCompleted",
    "TurnEvent",
    "TurnFailed",
    "TurnStarted",
    "WorkspaceChanged",
]
