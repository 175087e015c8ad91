"""The researcher's reading of a study: the participants table, the metrics per
condition and the study's analysis CSV.

Who may read: the study's owner and its members (coders, viewers). A participant or a
share link is refused (403: it reaches its own family only); anyone else is answered
404 naming nothing, as for a study that does not exist.

The table and the metrics cost a constant number of set-based queries however many
participants the study has (`db.repositories.study_reports`). The CSV is the
analysis export (`reports.analysis_export`) of every participant's family in join
order, with `participant` and `condition` first: the pseudonym and the condition's
name, never a user name or a token; it streams a family a page at a time.
"""

from __future__ import annotations

import io
from collections.abc import AsyncIterator

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Study
from haico.db.repositories import study_reports as repo
from haico.schemas.study_reports import ParticipantRow, StudyMetrics
from haico.services.access.principal import Principal
from haico.services.reports import analysis_export
from haico.services.reports.spreadsheet import SafeWriter
from haico.services.studies import features
from haico.services.studies import metrics as figures
from haico.services.studies import study as studies

CSV_COLUMNS = ("participant", "condition", *analysis_export.COLUMNS)


async def readable_in(s: AsyncSession, principal: Principal, study_id: str) -> Study:
    """The study, when `principal` owns it or is one of its members (the studies'
    one reading rule, `studies.readable`)."""
    study, _ = await studies.readable(s, principal, study_id)
    return study


async def _people(s: AsyncSession, study_id: str) -> list[figures.Participant]:
    counts = figures.families(
        await repo.thread_counts(s, study_id),
        await repo.tokens(s, study_id),
        await repo.replay_threads(s, study_id),
        await repo.head_moves(s, study_id),
    )
    return figures.participants(await repo.participants(s, study_id), counts)


async def participants(
    db: Database, *, principal: Principal, study_id: str
) -> list[ParticipantRow]:
    """Every participant in join order, with its counts."""
    async with db.read() as s:
        await readable_in(s, principal, study_id)
        return [p.row for p in await _people(s, study_id)]


async def study_metrics(db: Database, *, principal: Principal, study_id: str) -> StudyMetrics:
    """Mean and median of each count per condition."""
    async with db.read() as s:
        await readable_in(s, principal, study_id)
        conditions = await repo.conditions(s, study_id)
        return figures.metrics(conditions, await _people(s, study_id))


async def export_families(
    db: Database, *, principal: Principal, study_id: str
) -> list[tuple[str, str, str]]:
    """(participant, condition, family root) of every participant, checked before
    anything streams."""
    async with db.read() as s:
        await readable_in(s, principal, study_id)
        rows = await repo.family_roots(s, study_id)
    return [(features.label(n), condition, root) for n, condition, root in rows]


async def stream_csv(db: Database, families: list[tuple[str, str, str]]) -> AsyncIterator[str]:
    """The header, then every node of each family, `participant` and `condition` first,
    in chunks of text (RFC 4180, spreadsheet-safe as every CSV the server writes)."""
    buffer = io.StringIO()
    writer = SafeWriter(buffer)
    writer.writerow(CSV_COLUMNS)
    count = 0
    for participant, condition, root in families:
        async for row in analysis_export.family_rows(db, root):
            writer.writerow([participant, condition, *row])
            count += 1
            if count % analysis_export.CHUNK_ROWS == 0:
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
    yield buffer.getvalue()
