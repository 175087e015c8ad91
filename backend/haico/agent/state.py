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
inherited prefix.

The model sees a bounded window (`context_window`): the turn running now, always, and
before it the most recent whole earlier turns that fit both limits, at most
`context_turns` turns (`HAICO_CONTEXT_TURNS`) and at most `context_tokens` estimated
tokens for the whole window (`HAICO_CONTEXT_TOKENS`). Tokens are *estimated* as
characters / 4 (`estimate_tokens`), not counted by a provider's tokenizer. The window
is cut only before a user message, so a tool call and its result are never split.
The earlier turns are read from the newest `context_checkpoints(context_turns)`
checkpoints, a bounded read however long the conversation is.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, cast

from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, HumanMessage
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

# Defaults of the window (the settings `HAICO_CONTEXT_TURNS` / `HAICO_CONTEXT_TOKENS`
# have the same defaults): earlier turns the model sees besides the current one, and
# the estimated tokens of the whole window.
CONTEXT_TURNS = 10
CONTEXT_TOKENS = 8000
# Characters per token of the estimate (a rough rule for English text and JSON).
CHARS_PER_TOKEN = 4
# Checkpoints read beyond one per turn: slack for turns recorded twice (a failed or
# cancelled run leaves its own checkpoint and the record written on top).
CHECKPOINT_SLACK = 4


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


def context_checkpoints(turns: int) -> int:
    """How many of a thread's newest checkpoints hold its last `turns` turns."""
    return turns + CHECKPOINT_SLACK if turns > 0 else 0


def _text_chars(message: BaseMessage) -> int:
    content = message.content
    if isinstance(content, str):
        return len(content)
    total = 0
    for block in content:
        if isinstance(block, str):
            total += len(block)
        elif block.get("type") == "text":
            total += len(str(block.get("text", "")))
        else:
            total += len(json.dumps(block, default=str))
    return total


def estimate_tokens(messages: Iterable[BaseMessage]) -> int:
    """An *estimate* of the tokens of `messages`: their characters (text, plus each
    tool call's name and JSON arguments) divided by `CHARS_PER_TOKEN`, rounded up.
    Providers' tokenizers differ; this only has to be cheap and roughly right."""
    chars = 0
    for m in messages:
        chars += _text_chars(m)
        if isinstance(m, AIMessage):
            for call in m.tool_calls:
                chars += len(call["name"]) + len(json.dumps(call["args"], default=str))
    return -(-chars // CHARS_PER_TOKEN)


def split_turns(messages: Sequence[AnyMessage]) -> list[list[AnyMessage]]:
    """`messages` cut into turns, each starting at a HumanMessage (anything before the
    first one is a turn of its own), so a tool call and its result stay together."""
    turns: list[list[AnyMessage]] = []
    for m in messages:
        if isinstance(m, HumanMessage) or not turns:
            turns.append([])
        turns[-1].append(m)
    return turns


@dataclass(frozen=True)
class ContextWindow:
    """What the model sees of the transcript, and what was left out."""

    messages: list[AnyMessage]
    # Earlier turns shown besides the current one.
    shown_turns: int
    # Earlier turns known to exist that are not shown (see `context_window`).
    omitted_turns: int
    # The window's estimated tokens (`estimate_tokens`).
    tokens: int


def _turn_index(turn: Sequence[AnyMessage], key: str) -> int | None:
    first = turn[0] if turn else None
    if isinstance(first, HumanMessage):
        value = first.additional_kwargs.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return None


def context_window(
    messages: Sequence[AnyMessage],
    *,
    max_turns: int,
    max_tokens: int,
    turn_index_key: str | None = None,
) -> ContextWindow:
    """The window the model sees of `messages` (the recent transcript, the turn running
    now last): that turn whole, always, and before it the most recent whole turns that
    fit both limits, at most `max_turns` earlier turns and at most `max_tokens`
    estimated tokens for the whole window. Stops at the first turn that does not fit,
    so the window is always a contiguous suffix of whole turns.

    `omitted_turns` counts the earlier turns left out: those in `messages` not shown,
    or, when the current turn's HumanMessage carries its turn number under
    `turn_index_key` (turns 1..n-1 came before it), every earlier turn not shown,
    including those too old to have been read at all.
    """
    turns = split_turns(messages)
    if not turns:
        return ContextWindow([], 0, 0, 0)
    current, earlier = turns[-1], turns[:-1]
    tokens = estimate_tokens(current)
    shown: list[list[AnyMessage]] = []
    for turn in reversed(earlier):
        if len(shown) >= max_turns:
            break
        cost = estimate_tokens(turn)
        if tokens + cost > max_tokens:
            break
        shown.append(turn)
        tokens += cost
    shown.reverse()
    omitted = len(earlier) - len(shown)
    index = _turn_index(current, turn_index_key) if turn_index_key else None
    if index is not None:
        omitted = max(omitted, index - 1 - len(shown))
    window = [m for turn in [*shown, current] for m in turn]
    return ContextWindow(window, len(shown), omitted, tokens)


__all__ = [
    "CHARS_PER_TOKEN",
    "CONTEXT_TOKENS",
    "CONTEXT_TURNS",
    "AgentState",
    "ContextWindow",
    "context_checkpoints",
    "context_window",
    "estimate_tokens",
    "join_records",
    "last_turns",
    "split_turns",
    "turn_messages",
]
