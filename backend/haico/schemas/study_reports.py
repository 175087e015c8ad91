"""Wire shapes of a study's reading side: the participants table and the metrics per
condition (the researcher's dashboard)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from haico.schemas.common import Timestamp
from haico.schemas.studies import ParticipantState


class ParticipantRow(BaseModel):
    """One participant of the study, with what it did in its family."""

    participant: str = Field(description="the pseudonym in join order: `P001`, …")
    condition: str = Field(description="the condition's name")
    thread_id: str = Field(description="the participant's family (its root thread)")
    state: ParticipantState
    joined_at: Timestamp
    last_active_at: Timestamp = Field(
        description="the participant's latest step, consent, finish or join"
    )
    turns: int = Field(description="completed turns (replayed steps not counted)")
    branches: int = Field(description="threads made by sends off the head or by alternatives")
    restores: int = Field(description="checkouts to a node that was not the head")
    merges: int = Field(description="merge nodes")
    alternatives: int = Field(description="branches made by what-if replays")


class Stat(BaseModel):
    """One figure over a condition's participants; null when it has none."""

    mean: float | None
    median: float | None


class ConditionMetrics(BaseModel):
    condition: str = Field(description="the condition's name")
    participants: int
    finished: int
    turns: Stat
    branches: Stat
    restores: Stat
    merges: Stat
    alternatives: Stat
    time_on_task_s: Stat = Field(
        description="seconds from consent (or join) to finish (or the latest activity)"
    )
    input_tokens: Stat
    output_tokens: Stat


class StudyMetrics(BaseModel):
    conditions: list[ConditionMetrics] = Field(description="in the study's order")
