"""Titles: the conditional write that renames a thread (the rules: `services.families.titles`)."""

from __future__ import annotations

from sqlalchemy import bindparam, update
from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.base import table_of
from haico.db.models import Conversation

_conv = table_of(Conversation)

_SET_IF = (
    update(_conv)
    .where(_conv.c.thread_id == bindparam("ti_thread"))
    .where(_conv.c.title == bindparam("ti_expected"))
    .values(title=bindparam("ti_title"))
)


async def set_title_if(
    s: AsyncSession, thread_id: str, *, expected: str, title: str
) -> Conversation | None:
    """Set the thread's title if it still is `expected`; the thread when it changed,
    else None (a rename made meanwhile wins)."""
    result = await s.execute(
        _SET_IF, {"ti_thread": thread_id, "ti_expected": expected, "ti_title": title}
    )
    if getattr(result, "rowcount", 0) != 1:
        return None
    conv = await s.get(Conversation, thread_id)
    if conv is not None:
        await s.refresh(conv, ["title"])
    return conv
