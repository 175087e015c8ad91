"""Following a family's actions: where a stream starts, and what it replays first.

A follower asks for every action after `serverSeq` `after`. When the log still holds
that gap it is replayed from the log; when the gap is older than the log's window,
the stream starts with the current history state instead of a silent partial replay.
"""

from __future__ import annotations

from dataclasses import dataclass

from app.db.engine import Database
from app.events import log as action_log
from app.schemas import HistoryOut
from app.services.conversations import get_owned
from app.services.history import read_history_in


@dataclass
class StreamStart:
    root_thread_id: str
    after: int
    # Set when the gap is gone from the log: the state to resync from, and its seq.
    snapshot: HistoryOut | None = None


async def open_stream(
    db: Database, *, user_id: int, thread_id: str, after: int, retains: bool
) -> StreamStart:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        oldest, newest = await action_log.bounds(s)
        root = conv.root_thread_id
        if after > 0 and oldest > after + 1:
            history = await read_history_in(s, root, retains=retains)
            return StreamStart(root, newest, snapshot=history)
    return StreamStart(root, after)
