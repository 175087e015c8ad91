"""Announcing a reveal: when a family's codings (or a study's, for every family of
the study) are revealed or hidden again, each family concerned gets
`haico/threadChanged` `revealed` (with `reveal`) in its catalogue, in the transaction
that changes the flag, so a studio following the family refetches its codings."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.repositories import studies as repo
from haico.events import log as action_log

REVEALED = "revealed"


async def announce(s: AsyncSession, roots: Iterable[str], *, reveal: bool) -> None:
    """Tell the followers of each family in `roots` that its codings were revealed
    (or hidden again): one INSERT, however many families a study has."""
    await action_log.append_rows(
        s, [action_log.catalogue_row(root, root, REVEALED, reveal=reveal) for root in roots]
    )


async def study_families(s: AsyncSession, study_id: str) -> list[str]:
    """The root of every participant family of the study."""
    return [p.thread_id for p, _ in await repo.participants_of(s, study_id)]
