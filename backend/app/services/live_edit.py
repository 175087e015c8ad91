"""The record every live workspace edit writes, whoever makes it (REST, the agent's
tools, AHP): the thread's stamp, a draft's dirty flag and `haico/workspaceChanged`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.dialect import Write
from app.db.models import Conversation
from app.db.repositories import threads as threads_repo
from app.events import actions
from app.events import log as action_log


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
    """Record a live edit: the thread was active now, a draft becomes dirty, and the
    change is logged as `haico/workspaceChanged` for every follower of the family.
    `writes` go in the same statement (PostgreSQL); with `version`, the thread row must
    still be that version (read without a lock) or nothing is written (`moved`)."""
    stamp = (
        threads_repo.edited(conv)
        if version is None
        else threads_repo.edited_if_unchanged(conv, version)
    )
    await action_log.append_chat(
        s,
        conv.root_thread_id,
        actions.workspace_changed(conv.thread_id, surface, change, item),
        after=[*writes, *stamp],
    )
