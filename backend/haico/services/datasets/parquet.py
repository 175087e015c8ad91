"""The analysis table as Parquet: the CSV export's columns (`reports.analysis_export`,
the same rows), each typed: times as UTC timestamps, counts as integers, cost as a
float, flags as booleans, the rest as text; a study's table starts with
`participant` and `condition`. Built in row groups of `GROUP` rows, so a large
family never sits in memory as Python rows whole.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from haico.db.engine import Database
from haico.services.datasets.material import Tag
from haico.services.reports.analysis_export import COLUMNS, family_rows

GROUP = 5_000
TIMES = {"started_at", "completed_at"}
INTS = {
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "first_token_ms",
    "tool_calls",
    "document_chars",
    "preferences",
    "todos_open",
    "todos_done",
    "rejected",
    "edits_by_user",
    "edits_by_agent",
}
FLOATS = {"cost_usd"}
BOOLS = {"on_head_path", "tokens_estimated"}


def _type(column: str) -> pa.DataType:
    if column in TIMES:
        return pa.timestamp("us", tz="UTC")
    if column in INTS:
        return pa.int64()
    if column in FLOATS:
        return pa.float64()
    if column in BOOLS:
        return pa.bool_()
    return pa.string()


def schema(study: bool) -> pa.Schema:
    lead = [("participant", pa.string()), ("condition", pa.string())] if study else []
    return pa.schema(lead + [(c, _type(c)) for c in COLUMNS])


def _value(column: str, value: Any) -> Any:
    if value is None:
        return None
    if column in TIMES:
        return datetime.fromisoformat(value) if isinstance(value, str) else value
    if column in BOOLS:
        return value is True or value == "true"
    return value


def _batch(rows: list[list[Any]], sch: pa.Schema) -> pa.RecordBatch:
    columns = list(zip(*rows, strict=True)) if rows else [() for _ in sch.names]
    arrays = [
        pa.array([_value(name, v) for v in col], type=sch.field(name).type)
        for name, col in zip(sch.names, columns, strict=True)
    ]
    return pa.RecordBatch.from_arrays(arrays, schema=sch)


async def parquet(db: Database, roots: Iterable[tuple[str, Tag]], *, study: bool) -> bytes:
    """The Parquet file's bytes for these families."""
    sch = schema(study)
    out = io.BytesIO()
    with pq.ParquetWriter(out, sch) as writer:
        rows: list[list[Any]] = []
        for root, tag in roots:
            async for row in family_rows(db, root):
                rows.append(([tag.participant, tag.condition] if study else []) + row)
                if len(rows) >= GROUP:
                    writer.write_batch(_batch(rows, sch))
                    rows = []
        writer.write_batch(_batch(rows, sch))
    return out.getvalue()
