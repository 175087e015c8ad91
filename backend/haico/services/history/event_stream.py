"""Following a family's actions: where a stream starts, and what it replays first.

A follower asks for every action after `serverSeq` `after` (the `Last-Event-ID` of a
reconnecting `EventSource`, or `?after=`). When the log still holds that gap it is
replayed from the log. When the gap is older than the log's window (entries after
`after` were pruned), a partial replay would silently lose changes, so the stream
starts instead with one `haico/resync` action carrying the family's history and the
working thread's workspace, stamped with the newest `serverSeq`, and goes on live
from there. `after = 0` means "from the start of what the log holds".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from haico.db.engine import Database
from haico.db.repositories import threads as repo
from haico.errors import DomainError
from haico.events import log as action_log
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import get_for
from haico.services.history.state import read_history_in
from haico.services.workspace.state import live_state

RESYNC = "haico/resync"
RECHECK_SECONDS = 2.0


@dataclass
class StreamStart:
    root_thread_id: str
    after: int
    # A grantee's stream (not the owner's): its access is checked again every
    # `RECHECK_SECONDS`, so a revoked or expired share ends it within seconds.
    grantee: bool = False
    # Set when the gap is gone from the log: the envelope to send first (its
    # serverSeq is `after`, the newest seq when the stream opened).
    resync: dict[str, Any] | None = None


async def open_stream(
    db: Database, *, principal: Principal, thread_id: str, after: int, retains: bool
) -> StreamStart:
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        oldest, newest = await action_log.bounds(s)
        root = conv.root_thread_id
        grantee = conv.user_id != principal.id
        if not (after > 0 and oldest > after + 1):
            return StreamStart(root, after, grantee=grantee)
        history = await read_history_in(s, root, retains=retains)
        working = await repo.get_thread(s, history.working_thread_id) or conv
        workspace = (await live_state(s, working)).to_out()
        action = {
            "type": RESYNC,
            "history": history.model_dump(mode="json"),
            "workspace": workspace.model_dump(mode="json"),
        }
        envelope = {
            "channel": action_log.chat_channel(root),
            "action": action,
            "serverSeq": newest,
        }
        return StreamStart(root, newest, resync=envelope, grantee=grantee)


async def still_allowed(
    db: Database, *, principal: Principal, thread_id: str
) -> DomainError | None:
    """None while `principal` may still read the family; else why not (the share was
    revoked or expired → `Unauthorized`, or the thread is gone)."""
    try:
        async with db.read() as s:
            await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
    except DomainError as exc:
        return exc
    return None
