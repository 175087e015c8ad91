"""Wire shapes of "what if": model profiles, replay jobs and the aligned comparison.

Kept apart from `schemas.py` for size; the same rules apply (wire shapes only).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from haico.schemas.common import NO_NUL, STRICT, Timestamp
from haico.schemas.compare import Comparison
from haico.schemas.ledger import Provenance

Provider = Literal["offline", "openai", "anthropic"]
JobState = Literal["queued", "running", "done", "failed", "cancelled"]
MAX_INSTRUCTIONS = 20_000
MAX_PROFILE_NAME = 80
MAX_MODEL = 200
MAX_REPEATS = 5
ONE_LINE = r"^[^\x00\n\r]*\S[^\x00\n\r]*$"
NODE_PATTERN = r"^th_[0-9a-f]{32}:\d{1,9}$"


class ProfileParams(BaseModel):
    model_config = STRICT
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, ge=1, le=1_000_000)
    seed: int | None = Field(default=None, ge=0, le=2**31 - 1)


class ProfileOut(BaseModel):
    """Named agent settings; `default` is the server's configured model."""

    id: str
    name: str
    provider: Provider
    model: str
    params: ProfileParams
    instructions: str


class ProfileIn(BaseModel):
    model_config = STRICT
    name: str = Field(min_length=1, max_length=MAX_PROFILE_NAME, pattern=ONE_LINE)
    provider: Provider
    model: str = Field(default="", max_length=MAX_MODEL, pattern=NO_NUL)
    params: ProfileParams = Field(default_factory=ProfileParams)
    instructions: str = Field(default="", max_length=MAX_INSTRUCTIONS, pattern=NO_NUL)


class ProfilePatch(BaseModel):
    model_config = STRICT
    name: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_PROFILE_NAME,
        pattern=ONE_LINE,
    )
    provider: Provider | None = None
    model: str | None = Field(default=None, max_length=MAX_MODEL, pattern=NO_NUL)
    params: ProfileParams | None = None
    instructions: str | None = Field(default=None, max_length=MAX_INSTRUCTIONS, pattern=NO_NUL)


class ReplayIn(BaseModel):
    model_config = STRICT
    from_node: str = Field(max_length=60, pattern=NODE_PATTERN)
    to_node: str = Field(max_length=60, pattern=NODE_PATTERN)
    profile_id: str = Field(min_length=1, max_length=40, pattern=NO_NUL)
    repeats: int = Field(default=1, ge=1, le=MAX_REPEATS)


class JobProgress(BaseModel):
    done: int
    total: int


class JobOut(BaseModel):
    """A background job (a replay): its state, progress and the threads it built."""

    id: str
    kind: Literal["replay"]
    state: JobState
    progress: JobProgress
    thread_ids: list[str]
    error: str | None
    thread_id: str
    profile_id: str | None
    created_at: Timestamp
    updated_at: Timestamp


class PathStep(BaseModel):
    """One side of a step: its node, reply and provenance (from the ledger)."""

    node_id: str
    user_message: str
    reply: str
    state: str
    provenance: Provenance


class PathPair(BaseModel):
    """Step i after the fork on each side (a missing side is null) and their Comparison
    (null when a side is missing)."""

    a: str | None
    b: str | None
    comparison: Comparison | None
    a_step: PathStep | None
    b_step: PathStep | None


class PathTotals(BaseModel):
    steps: int
    input_tokens: int
    output_tokens: int
    duration_ms: int
    cost_usd: float | None
    tokens_estimated: bool


class SideTotals(BaseModel):
    a: PathTotals
    b: PathTotals


class PathsCompared(BaseModel):
    """Two lineages from their shared node down, step by step."""

    fork: str | None
    pairs: list[PathPair]
    totals: SideTotals
