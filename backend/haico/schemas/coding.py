"""Wire shapes of coding: codebooks and codes, codings, agreement, pairwise judgments."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from haico.schemas.common import MAX_INT, MAX_TEXT, NO_NUL, STRICT, Timestamp

MAX_CODES_PER_BOOK = 500
MAX_CODES_PER_CALL = 200
MAX_NAME = 200
MAX_DESCRIPTION = 5_000
MAX_MEMO = 20_000
MAX_CRITERION = 200
# A node id: "th_" + 32 hex digits, ":" and a turn number.
NODE_ID = r"^th_[0-9a-f]{32}:[0-9]{1,10}$"

Name = Annotated[
    str, Field(min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00\n\r]*\S[^\x00\n\r]*$")
]
Color = Annotated[str, Field(pattern=r"^#[0-9a-fA-F]{6}$")]
Id = Annotated[int, Field(ge=1, le=MAX_INT)]
Field_ = Literal["user_message", "reply"]


class CodeIn(BaseModel):
    """A new code; `parent` names a code of the same codebook by its id, or (in one
    create or one PATCH's `add`) a code listed before it by its name."""

    model_config = STRICT
    name: Name
    description: str | None = Field(default=None, max_length=MAX_DESCRIPTION, pattern=NO_NUL)
    color: Color | None = None
    parent: Id | Name | None = None


class CodebookIn(BaseModel):
    model_config = STRICT
    name: Name
    codes: list[CodeIn] = Field(default_factory=list, max_length=MAX_CODES_PER_CALL)


class Rename(BaseModel):
    model_config = STRICT
    id: Id
    name: Name


class CodebookPatch(BaseModel):
    """Rename the codebook, add codes, rename codes, retire codes (never delete)."""

    model_config = STRICT
    name: Name | None = None
    add: list[CodeIn] = Field(default_factory=list, max_length=MAX_CODES_PER_CALL)
    rename: list[Rename] = Field(default_factory=list, max_length=MAX_CODES_PER_CALL)
    retire: list[Id] = Field(default_factory=list, max_length=MAX_CODES_PER_CALL)


class CodeOut(BaseModel):
    id: int
    name: str
    description: str
    color: str | None
    parent_id: int | None
    retired: bool


class CodebookOut(BaseModel):
    id: int
    name: str
    codes: list[CodeOut]
    # The codebook's owner (a coder may read another user's codebook).
    owner: str | None = None


class CodeSuggestion(BaseModel):
    """A free-text code of the caller's notes that no codebook of theirs holds yet."""

    code: str
    count: int


class Span(BaseModel):
    """Code points `start..end` (end excluded) of a node's user message or reply."""

    model_config = STRICT
    field: Field_
    start: Annotated[int, Field(ge=0, le=MAX_INT)]
    end: Annotated[int, Field(ge=1, le=MAX_INT)]


class CodingIn(BaseModel):
    model_config = STRICT
    code_id: Id
    span: Span | None = None
    memo: str | None = Field(default=None, max_length=MAX_MEMO, pattern=NO_NUL)


class CodingOut(BaseModel):
    id: int
    node_id: str
    code_id: int
    coder: str
    span: Span | None
    memo: str
    created_at: Timestamp
    # An imported coding: the coder its document recorded (the importer is `coder`).
    imported_author: str | None = None
    # The caller made it (theirs to delete): the studio needs no coder names to tell.
    mine: bool = False


class Statistics(BaseModel):
    percent_agreement: float | None
    cohen_kappa: float | None
    krippendorff_alpha: float | None


class CodeAgreement(Statistics):
    code_id: int
    name: str
    units: int


class AgreementOut(BaseModel):
    coders: list[str]
    units: int
    codes: list[CodeAgreement]
    overall: Statistics


class JudgmentIn(BaseModel):
    model_config = STRICT
    a: Annotated[str, Field(pattern=NODE_ID)]
    b: Annotated[str, Field(pattern=NODE_ID)]
    preferred: Literal["a", "b", "tie"]
    criterion: str | None = Field(default=None, max_length=MAX_CRITERION, pattern=NO_NUL)
    rationale: str | None = Field(default=None, max_length=MAX_TEXT, pattern=NO_NUL)


class JudgmentOut(BaseModel):
    id: int
    a: str
    b: str
    preferred: Literal["a", "b", "tie"]
    criterion: str | None
    rationale: str | None
    judge: str
    created_at: Timestamp
    imported_author: str | None = None
