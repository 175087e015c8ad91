"""The agent's state schema.

The transcript lives in a `DeltaChannel`: each checkpoint stores only the messages
written since the previous one (plus, every `SNAPSHOT_EVERY` updates, one full copy
that bounds how far a read has to replay). LangGraph's default `MessagesState`
instead rewrites the whole list at every checkpoint, which makes storage grow with
the square of the conversation length.
"""

from __future__ import annotations

from typing import Annotated

from langchain_core.messages import AnyMessage
from langgraph.channels import DeltaChannel
from langgraph.graph.message import _messages_delta_reducer
from typing_extensions import TypedDict

# Updates between full snapshots of the transcript. A turn makes two to four updates
# (the user message, the model's answers, the tool results), so a snapshot lands every
# ~150-250 turns: its cost amortises to a small fraction of a message per turn, and a
# read replays at most this many writes.
SNAPSHOT_EVERY = 500


class AgentState(TypedDict):
    # add_messages semantics (dedup by id, RemoveMessage), batched for replay.
    messages: Annotated[
        list[AnyMessage],
        DeltaChannel(_messages_delta_reducer, snapshot_frequency=SNAPSHOT_EVERY),
    ]


__all__ = ["SNAPSHOT_EVERY", "AgentState"]
