"""A study's event stream: its own actions (a participant joined, consented, finished)
and the turn actions of every participant's family, in `serverSeq` order, for a live
dashboard.

The study's actions go into the action log like any other change, in the transaction
that makes them (`joined_row`, `log_consented`, `log_finished`), on the study's own
channel (`study_channel`) and under no family, so a participant's own stream never
sees them; a join names the new family, which the stream follows from then on. The
streamed text of a reply (`chat/delta`) is left out: a dashboard counts steps, it does
not show replies, and 60 streaming participants would send it a thousand of them a
second.

A follower asks for everything after `after` (`?after=`, or the `Last-Event-ID` of a
reconnecting `EventSource`). The gap is read from the log with the study's filter;
when the log no longer holds it (pruned), the stream starts with one `study/resync`
action at the newest `serverSeq`: the dashboard reads the table again and goes on
live from there.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.repositories import study_reports as repo
from haico.domain import LoggedAction
from haico.errors import DomainError
from haico.events import log as action_log
from haico.events.bus import EventBus
from haico.services.access.principal import Principal
from haico.services.studies.reports import readable_in

JOINED = "study/participantJoined"
CONSENTED = "study/participantConsented"
FINISHED = "study/participantFinished"
RESYNC = "study/resync"
# Seconds between checks that a member still may read the study (a member removed
# while following sees the stream end within this).
RECHECK_SECONDS = 2.0
# Family actions a dashboard does not follow.
LEFT_OUT = frozenset({"chat/delta"})
PAGE = 500


def study_channel(study_id: str) -> str:
    return f"haico-study:/{study_id}"


async def _log(s: AsyncSession, study_id: str, action: dict[str, Any]) -> None:
    await action_log.append_rows(s, [(None, study_channel(study_id), action)])


def joined_row(
    *, study_id: str, participant: str, condition: str, thread_id: str
) -> tuple[None, str, dict[str, Any]]:
    """A participant joined (appended in the join's transaction, with the others of its
    batch): its pseudonym, condition and family, so the dashboard adds a row and the
    stream follows the family."""
    action = {
        "type": JOINED,
        "studyId": study_id,
        "participant": participant,
        "condition": condition,
        "threadId": thread_id,
    }
    return None, study_channel(study_id), action


async def log_consented(
    s: AsyncSession, *, study_id: str, participant: str, thread_id: str
) -> None:
    action = {"type": CONSENTED, "studyId": study_id, "participant": participant}
    await _log(s, study_id, action | {"threadId": thread_id})


async def log_finished(s: AsyncSession, *, study_id: str, participant: str, thread_id: str) -> None:
    action = {"type": FINISHED, "studyId": study_id, "participant": participant}
    await _log(s, study_id, action | {"threadId": thread_id})


@dataclass
class StudyStream:
    """Where a follower of the study starts, and what it follows."""

    study_id: str
    channel: str
    after: int
    roots: set[str] = field(default_factory=set)
    # A member's stream (not the owner's): checked again every RECHECK_SECONDS.
    member: bool = False
    # Set when the gap is gone from the log: the envelope to send first.
    resync: dict[str, Any] | None = None

    def wants(self, entry: LoggedAction) -> bool:
        """Whether the entry belongs to the study (a join adds its family)."""
        if entry.channel == self.channel:
            thread = entry.action.get("threadId")
            if entry.action.get("type") == JOINED and isinstance(thread, str):
                self.roots.add(thread)
            return True
        return entry.root_thread_id in self.roots and entry.action.get("type") not in LEFT_OUT


async def open_stream(
    db: Database, *, principal: Principal, study_id: str, after: int
) -> StudyStream:
    """Check the caller may read the study and say where its stream starts."""
    async with db.read() as s:
        study = await readable_in(s, principal, study_id)
        roots = {root for _, _, root in await repo.family_roots(s, study_id)}
        oldest, newest = await action_log.bounds(s)
    start = StudyStream(
        study_id, study_channel(study_id), after, roots, member=study.owner_id != principal.id
    )
    if after > 0 and oldest > after + 1:
        start.after = newest
        start.resync = {
            "channel": start.channel,
            "action": {"type": RESYNC, "studyId": study_id},
            "serverSeq": newest,
        }
    return start


async def follow(
    db: Database, bus: EventBus, start: StudyStream, *, limit: int | None
) -> AsyncGenerator[LoggedAction, None]:
    """The study's entries after `start.after`: the logged gap first (read with the
    study's filter), then live ones. Raises `bus.Overflowed` when the follower reads
    too slowly (its stream ends; it resumes from the last id it read)."""
    delivered = start.after
    while True:
        async with db.read() as s:
            page = await repo.study_log_after(
                s, after=delivered, roots=start.roots, channel=start.channel, limit=PAGE
            )
        for row in page:
            entry = LoggedAction(row.seq, row.root_thread_id, row.channel, row.action)
            delivered = entry.seq
            if start.wants(entry):
                yield entry
        if len(page) < PAGE:
            break
    # What was committed since the last page is read again by the bus (unfiltered,
    # a few entries at most), then everything live.
    entries = bus.stream(root_thread_ids=None, after=delivered, limit=limit)
    try:
        async for entry in entries:
            if start.wants(entry):
                yield entry
    finally:
        await entries.aclose()


async def still_allowed(db: Database, *, principal: Principal, study_id: str) -> DomainError | None:
    """None while `principal` may still read the study; else why not."""
    try:
        async with db.read() as s:
            await readable_in(s, principal, study_id)
    except DomainError as exc:
        return exc
    return None
