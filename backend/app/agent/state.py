"""The agent's state schema and how turn records make up a transcript.

The `messages` channel is turn-scoped: it holds only the current turn's messages. An
update that opens with a HumanMessage the channel has not seen starts a new list (the
next turn); any other update is merged in with `add_messages` semantics (append, or
replace by id). A turn runs with `durability="exit"`, so each turn writes one
checkpoint holding just that turn's messages, and storage and the per-turn read stay
constant however long the conversation gets (a list of the whole transcript, as in
`MessagesState`, is rewritten at every checkpoint and grows with the square of the
length; even a delta channel has to replay its history or store full copies).

The transcript is the thread's checkpoints read oldest to newest, each one a *turn
record*, joined by message id (`join_records`): a turn recorded twice (a failed run's
own checkpoint, then the record of the interrupted turn written on top of it) keeps
its latest version in its first position. A seeded thread's first record is the whole
inherited prefix. The model sees the last `CONTEXT_TURNS` turns (`last_turns`), read
from the newest `CONTEXT_CHECKPOINTS` checkpoints, plus the turn running now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Annotated, Any, cast

from langchain_core.messages import AnyMessage, HumanMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

# Earlier turns the model sees besides the current one.
CONTEXT_TURNS = 10
# Checkpoints read for them: one per turn, plus slack for turns recorded twice (a
# failed or cancelled run leaves its own checkpoint and the record written on top).
CONTEXT_CHECKPOINTS = CONTEXT_TURNS + 4


def turn_messages(current: list[AnyMessage], update: Any) -> list[AnyMessage]:
    """Reducer of the turn-scoped channel: a new turn's HumanMessage starts a fresh
    list; anything else is added to the current turn (dedup by id, as `add_messages`)."""
    incoming = update if isinstance(update, list) else [update]
    if incoming:
        first = incoming[0]
        if isinstance(first, HumanMessage) and (
            first.id is None or all(m.id != first.id for m in current)
        ):
            current = []
    return cast(list[AnyMessage], add_messages(cast(Any, current), incoming))


class AgentState(TypedDict):
    # The current turn's messages only (see the module doc).
    messages: Annotated[list[AnyMessage], turn_messages]


def join_records(records: Iterable[Sequence[AnyMessage]]) -> list[AnyMessage]:
    """Turn records, oldest first, as one transcript: a message seen again (same id)
    takes the later version and keeps its first position."""
    out: list[AnyMessage] = []
    index: dict[str, int] = {}
    for record in records:
        for m in record:
            if m.id is not None and m.id in index:
                out[index[m.id]] = m
                continue
            if m.id is not None:
                index[m.id] = len(out)
            out.append(m)
    return out


def last_turns(messages: Sequence[AnyMessage], turns: int) -> list[AnyMessage]:
    """The last `turns` turns of `messages` (all of them when there are no more), cut
    just before a HumanMessage, so a tool call and its result always stay together."""
    if turns <= 0:
        return []
    starts = [i for i, m in enumerate(messages) if isinstance(m, HumanMessage)]
    if len(starts) <= turns:
        return list(messages)
    return list(messages[starts[-turns] :])


__all__ = [
    "CONTEXT_CHECKPOINTS",
    "CONTEXT_TURNS",
    "AgentState",
    "join_records",
    "last_turns",
    "turn_messages",
]
