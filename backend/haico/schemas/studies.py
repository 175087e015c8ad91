"""Wire shapes of studies: a study as created, patched and read, its conditions and
their features, a member, what joining answers, and what a participant reads of its
own session."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from haico.domain import TITLE_CHARS
from haico.schemas.common import MAX_DOC, MAX_TEXT, NO_NUL, STRICT, Timestamp

StudyState = Literal["open", "closed"]
MemberRole = Literal["coder", "viewer"]
ParticipantState = Literal["joined", "consented", "finished"]

# How many conditions, task items and characters a study may hold.
MAX_CONDITIONS = 20
MAX_TASK_ITEMS = 1000
STUDY_NAME_CHARS = 200
CONDITION_NAME_CHARS = 80
# A token a client sends (`st_…`, `pt_…`): longer is no token of ours.
MAX_TOKEN_CHARS = 100


class Features(BaseModel):
    """What a condition's interface allows; each defaults to `true`. The server
    enforces `branching`, `merge` and `whatif`; `graph` is the studio's to honour."""

    model_config = STRICT

    graph: bool = True
    branching: bool = True
    merge: bool = True
    whatif: bool = True


class TaskDocument(BaseModel):
    model_config = STRICT

    title: str = Field(default="", max_length=TITLE_CHARS, pattern=NO_NUL)
    content: str = Field(default="", max_length=MAX_DOC, pattern=NO_NUL)


TaskItem = Annotated[str, Field(min_length=1, max_length=MAX_TEXT, pattern=NO_NUL)]


class Task(BaseModel):
    """The workspace every participant's family starts from."""

    model_config = STRICT

    objective: str | None = Field(default=None, max_length=MAX_TEXT, pattern=NO_NUL)
    document: TaskDocument | None = None
    preferences: list[TaskItem] = Field(default_factory=list, max_length=MAX_TASK_ITEMS)
    todos: list[TaskItem] = Field(default_factory=list, max_length=MAX_TASK_ITEMS)


class ConditionIn(BaseModel):
    model_config = STRICT

    name: str = Field(min_length=1, max_length=CONDITION_NAME_CHARS, pattern=NO_NUL)
    profile_id: str | None = Field(default=None, max_length=40, pattern=NO_NUL)
    features: Features = Field(default_factory=Features)


class StudyCreate(BaseModel):
    model_config = STRICT

    name: str = Field(min_length=1, max_length=STUDY_NAME_CHARS, pattern=NO_NUL)
    description: str = Field(default="", max_length=MAX_TEXT, pattern=NO_NUL)
    task: Task = Field(default_factory=Task)
    conditions: list[ConditionIn] = Field(min_length=1, max_length=MAX_CONDITIONS)
    consent: str | None = Field(default=None, max_length=MAX_TEXT, pattern=NO_NUL)
    codebook_id: int | None = Field(
        default=None, ge=1, description="one of the caller's codebooks (`POST /api/codebooks`)"
    )


class StudyPatch(BaseModel):
    model_config = STRICT

    name: str | None = Field(
        default=None, min_length=1, max_length=STUDY_NAME_CHARS, pattern=NO_NUL
    )
    description: str | None = Field(default=None, max_length=MAX_TEXT, pattern=NO_NUL)
    state: StudyState | None = None
    reveal: bool | None = None


class ConditionOut(BaseModel):
    id: str
    name: str
    profile_id: str | None = Field(description="null: the server's default model")
    features: Features


class StudyOut(BaseModel):
    id: str = Field(description="`sy_` and 24 hex digits")
    name: str
    description: str
    task: Task
    conditions: list[ConditionOut]
    consent: str | None
    codebook_id: int | None
    state: StudyState
    join_token: str | None = Field(
        description="the join link's token (`st_…`); only the owner is answered it"
    )
    participants: int = Field(description="how many have joined")
    reveal: bool
    created_at: Timestamp
    role: Literal["owner", "coder", "viewer"] = Field(description="the caller's role")


class MemberIn(BaseModel):
    model_config = STRICT

    user: str = Field(min_length=1, max_length=200, pattern=NO_NUL)
    role: MemberRole


class MemberOut(BaseModel):
    user: str
    role: MemberRole
    created_at: Timestamp


class JoinIn(BaseModel):
    model_config = STRICT

    token: str = Field(min_length=1, max_length=MAX_TOKEN_CHARS, pattern=NO_NUL)


class ConditionRef(BaseModel):
    id: str
    name: str


class JoinOut(BaseModel):
    participant: str = Field(description="the pseudonym in join order: `P001`, `P002`, …")
    condition: ConditionRef
    thread_id: str
    token: str = Field(description="the participant's token (`pt_…`), shown once")


class StudyRef(BaseModel):
    id: str
    name: str
    consent: str | None


class ParticipantCondition(BaseModel):
    id: str
    name: str
    features: Features


class ParticipantMe(BaseModel):
    """What a participant reads of its own session."""

    participant: str
    study: StudyRef
    condition: ParticipantCondition
    thread_id: str
    state: ParticipantState
