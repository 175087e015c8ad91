"""The analysis export (`export.csv`): one row per node, as text, rows, or a DataFrame."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AnalysisExport:
    """The CSV as the server wrote it (RFC 4180, a header row; a cell that a spreadsheet
    would run as a formula carries a leading `'`, kept here as written)."""

    csv: str

    def rows(self) -> list[dict[str, str]]:
        return list(csv.DictReader(io.StringIO(self.csv)))

    def to_pandas(self) -> Any:
        """A `pandas.DataFrame`, one row per node (`pip install haico[analysis]`)."""
        try:
            import pandas
        except ImportError as exc:
            raise ImportError("to_pandas() needs pandas: pip install 'haico[analysis]'") from exc
        return pandas.read_csv(io.StringIO(self.csv), keep_default_na=False, na_values=[""])
