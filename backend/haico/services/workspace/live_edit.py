"""The record every live workspace edit writes, whoever makes it (REST, the agent's
tools, AHP): the thread's stamp, a draft's dirty flag and `haico/workspaceChanged`."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import Write
from haico.db.models import Conversation
from haico.db.repositories import ledger as ledger_repo
from haico.db.repositories import threads as threads_repo
from haico.domain import now
from haico.events import actions
from haico.events import log as action_log

Origin = Literal["user", "agent", "merge", "replay", "import"]


@dataclass(frozen=True)
class Actor:
    """Who makes the edits of the current task: `origin`, and `author` (None: the
    thread owner's name, read by the write itself)."""

    origin: Origin = "user"
    author: str | None = None


# Set by whoever runs edits for someone else (the turn's task sets the agent); an
# edit made anywhere else is the user's own (REST, the studio, AHP).
USER = Actor()
ACTOR: ContextVar[Actor] = ContextVar("haico_edit_actor", default=USER)
# The request's caller (`events.log.CALLER`): a user's edit in a family it does not own
# (an editor of a shared family) names that caller.
CALLER = action_log.CALLER

# The ledger's vocabulary for a live edit's surface and change.
_SURFACE = {
    "objective": "objective",
    "document": "document",
    "preferences": "preference",
    "todos": "todo",
    "artifacts": "artifact",
}
_KIND = {"set": "change", "added": "add", "updated": "change", "removed": "remove"}


def _edit(conv: Conversation, surface: str, change: str, item: dict[str, Any] | None) -> Write:
    actor = ACTOR.get()
    author = actor.author
    if actor.origin == "user" and author is None:
        author = action_log.grantee(conv.user_id)
    uid = (item or {}).get("uid")
    if uid is None and surface == "artifacts" and item is not None:
        uid = str(item.get("id"))
    return ledger_repo.edit_write(
        thread_id=conv.thread_id,
        turn_index=conv.turn_index,
        surface=_SURFACE.get(surface, surface),
        uid=str(uid) if uid is not None else None,
        kind=_KIND.get(change, "change"),
        origin=actor.origin,
        author=author,
        user_id=conv.user_id,
        at=now(),
    )


async def changed(
    s: AsyncSession,
    conv: Conversation,
    surface: str,
    change: str,
    item: dict[str, Any] | None = None,
    *,
    writes: Sequence[Write] = (),
    version: int | None = None,
) -> None:
    """Record a live edit: the thread was active now, a draft becomes dirty, who made
    it (`ACTOR`, kept in the research ledger's `workspace_edits`), and the change is
    logged as `haico/workspaceChanged` for every follower of the family. `writes` go
    in the same statement (PostgreSQL); with `version`, the thread row must still be
    that version (read without a lock) or nothing is written (`moved`)."""
    stamp = (
        threads_repo.edited(conv)
        if version is None
        else threads_repo.edited_if_unchanged(conv, version)
    )
    await action_log.append_chat(
        s,
        conv.root_thread_id,
        actions.workspace_changed(conv.thread_id, surface, change, item),
        after=[*writes, _edit(conv, surface, change, item), *stamp],
    )
