"""What every wire shape leans on: the text and number bounds, the UTC timestamp,
the strict request config, and the answers that belong to no feature (errors, health)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, BeforeValidator, ConfigDict

MAX_TEXT = 100_000
MAX_DOC = 900_000
# The largest id or turn number a request may name (the columns are 32-bit or larger).
MAX_INT = 2**31 - 1


def _assume_utc(value: Any) -> Any:
    # SQLite hands back naive datetimes; every stored time is UTC.
    if isinstance(value, datetime) and value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value


Timestamp = Annotated[AwareDatetime, BeforeValidator(_assume_utc)]
"""An RFC 3339 time with its UTC offset, on every database."""

# No NUL characters in request text: PostgreSQL text cannot store them.
NO_NUL = r"^[^\x00]*$"

# Request bodies: strict types (no "1" for 1, no `false` for 0, no 1.0 for `true`);
# unknown fields refused.
STRICT = ConfigDict(extra="forbid", strict=True)


class ErrorOut(BaseModel):
    """Every error answer: a snake_case `code` and a human `message`."""

    code: str
    message: str
    data: dict[str, Any] | None = None


class ValidationErrorOut(ErrorOut):
    """A request that does not match its schema; `detail` is FastAPI's error list."""

    detail: list[dict[str, Any]] | None = None


class HealthOut(BaseModel):
    status: Literal["ok", "degraded"]
    database: Literal["ok", "unreachable"]
    backend: Literal["sqlite", "postgresql"]
