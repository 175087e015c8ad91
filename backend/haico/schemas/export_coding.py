"""The coding part of a family's export document: the codebooks its codings use,
the codings and the pairwise judgments. Nodes are named by their ids in the
document, codes by their codebook's `key` and their name (no row id is in it).
Unknown fields are refused; text may hold no NUL."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from haico.schemas.coding import (
    MAX_CODES_PER_BOOK,
    MAX_CRITERION,
    MAX_DESCRIPTION,
    MAX_MEMO,
    Color,
    Name,
    Span,
)
from haico.schemas.common import MAX_TEXT, NO_NUL, Timestamp

# (as the rest of the document: `export.DOC`, `export.ImportText`)
DOC = ConfigDict(extra="forbid")
ImportText = Annotated[str, Field(pattern=NO_NUL)]
NodeRef = Annotated[str, Field(min_length=1, max_length=200)]


class ExportCode(BaseModel):
    model_config = DOC
    name: Name
    description: ImportText = Field(default="", max_length=MAX_DESCRIPTION)
    color: Color | None = None
    # the name of a code of the same codebook listed before it
    parent: Name | None = None
    retired: bool = False


class ExportCodebook(BaseModel):
    """A codebook the document's codings use, with all its codes (retired ones too)."""

    model_config = DOC
    # what the codings call it in this document
    key: Annotated[str, Field(min_length=1, max_length=40)]
    name: Name
    codes: list[ExportCode] = Field(default_factory=list, max_length=MAX_CODES_PER_BOOK)


class ExportCoding(BaseModel):
    model_config = DOC
    node_id: NodeRef
    codebook: Annotated[str, Field(min_length=1, max_length=40)]
    code: Name
    span: Span | None = None
    memo: ImportText = Field(default="", max_length=MAX_MEMO)
    coder: ImportText = Field(default="", max_length=200)
    # a coding of an imported family: the coder its own document recorded
    imported_author: ImportText | None = Field(default=None, max_length=200)
    created_at: Timestamp | None = None


class ExportJudgment(BaseModel):
    model_config = DOC
    a: NodeRef
    b: NodeRef
    preferred: Literal["a", "b", "tie"]
    criterion: ImportText | None = Field(default=None, max_length=MAX_CRITERION)
    rationale: ImportText | None = Field(default=None, max_length=MAX_TEXT)
    judge: ImportText = Field(default="", max_length=200)
    imported_author: ImportText | None = Field(default=None, max_length=200)
    created_at: Timestamp | None = None
