"""Spreadsheet-safe CSV: the one writer every CSV the server produces goes through.

A spreadsheet reads a cell that begins with `=`, `+`, `-` or `@` (and, in some, a tab
or a carriage return) as a formula, so a note such as `=HYPERLINK(…)` written by a
commenter would run when the owner opens the export. Such a text cell is written with
a leading `'` (the OWASP rule for CSV injection), which spreadsheets show as text;
every other character is kept. Numbers, booleans and empty cells are written as they
are: only text can carry a formula.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any, Protocol

# The characters a spreadsheet may read as the start of a formula.
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


class _Sink(Protocol):
    def write(self, s: str, /) -> object: ...


def safe_cell(value: Any) -> Any:
    """`value`, with a leading `'` when it is text a spreadsheet would read as a formula."""
    if isinstance(value, str) and value.startswith(FORMULA_START):
        return "'" + value
    return value


class SafeWriter:
    """`csv.writer` (RFC 4180: CRLF, minimal quoting, doubled quotes) whose every text
    cell goes through `safe_cell`."""

    def __init__(self, sink: _Sink) -> None:
        self._writer = csv.writer(sink)

    def writerow(self, row: Iterable[Any]) -> None:
        self._writer.writerow([safe_cell(v) for v in row])
