"""Small value types every layer shares: node ids, thread ids, branch and node states,
logged actions, clocks.

This module imports nothing from the app, so `db`, `agent`, `events` and `services`
can all use it without climbing a layer.
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

THREAD_PREFIX = "th_"
# The longest title a conversation, a document or an artifact may have (its column's size).
TITLE_CHARS = 500


# The ids this host makes, and a client may choose for a new conversation.
NEW_THREAD_ID = re.compile(r"th_[0-9a-f]{32}")


def new_thread_id() -> str:
    return THREAD_PREFIX + uuid.uuid4().hex


def suffixed_title(title: str, suffix: str) -> str:
    """`title` with `suffix`, the title cut so that the whole fits in `TITLE_CHARS`."""
    return title[: TITLE_CHARS - len(suffix)] + suffix


def now() -> datetime:
    return datetime.now(UTC)


def aware(stamp: datetime) -> datetime:
    """SQLite hands back naive datetimes; every stamp the app writes is UTC."""
    return stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)


def is_valid_text(value: Any) -> bool:
    """Whether every string in `value` (nested lists and dicts, keys too) is valid
    Unicode: JSON can carry a lone surrogate (`"\\ud800"`), which no database column,
    log line or UTF-8 answer can hold."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return False
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return True


@dataclass(frozen=True)
class Limits:
    """How much one thread may hold (settings `HAICO_MAX_*`); the defaults equal the
    request schemas' caps. Every write path checks them: REST, the agent's tools,
    AHP, imports."""

    items: int = 1000  # preferences, and todos, per thread
    document_chars: int = 900_000
    message_chars: int = 100_000


class BranchStatus(StrEnum):
    """The status of a branch row (a root thread has no branch row)."""

    PENDING = "pending"  # being built: copies written, transcript not yet seeded
    ACTIVE = "active"  # a real, listed branch
    DRAFT = "draft"  # a hidden restored view that becomes a branch on send


class NodeState(StrEnum):
    """The state of a turn (a graph node): running until it ends complete, cancelled or
    in error. REST and the AHP host's turns spell it the same way."""

    RUNNING = "running"
    COMPLETE = "complete"
    CANCELLED = "cancelled"
    ERROR = "error"


class NodeKind(StrEnum):
    """What made a node: a turn (a user message and the agent's reply), or a merge or a
    pick that brought another node's work into the workspace (`services.merge`). The
    graph and AHP show a pick as a merge node; the record keeps the difference, which
    decides what a later merge takes as its base."""

    TURN = "turn"
    MERGE = "merge"
    PICK = "pick"
    # The undo of a merge or a pick (`services.merge.revert`): its workspace is the one
    # before that node, which it names as its `merged_from`; the graph shows it as a
    # merge node.
    REVERT = "revert"


# AHP: the `_meta` key of a merge node's message that names its source node.
MERGED_FROM_META = "haico/mergedFrom"
# AHP: the `_meta` key of a revert node's message that names the merge node it undid.
REVERTS_META = "haico/reverts"
# The name of the grantee who sent a turn, made a merge or checked out (in the
# message's `_meta`, or the checkout action's): absent for the family's owner.
AUTHOR_META = "haico/author"


@dataclass(frozen=True, slots=True)
class LoggedAction:
    """One committed entry of the action log, as storage hands it up: its global `seq`
    (AHP's serverSeq), its family (None for none), its channel and the action.

    The bus gives the same value to every subscriber: nobody changes it (`action`
    included)."""

    seq: int
    root_thread_id: str | None
    channel: str
    action: dict[str, Any]


@dataclass(frozen=True, order=True)
class NodeId:
    """Turn k of thread T: written `"T:k"` everywhere (graph node, turn id, AHP Turn.id)."""

    thread_id: str
    turn: int

    def __str__(self) -> str:
        return f"{self.thread_id}:{self.turn}"

    @classmethod
    def parse(cls, text: str) -> NodeId | None:
        """The node a string names, or None when it is not a node id."""
        thread_id, sep, k = text.rpartition(":")
        if not sep or not thread_id.startswith(THREAD_PREFIX) or not k.isdigit():
            return None
        return cls(thread_id, int(k))

    @classmethod
    def format(cls, thread_id: str, turn: int) -> str:
        return str(cls(thread_id, turn))
