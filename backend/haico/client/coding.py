"""`Client`'s coding calls: codebooks, codings of a step or a span, agreement, pairwise
judgments of siblings, and the datasets (`.qdpx`, JSONL, Parquet) of a family or a
study. A mixin of `Client`, which answers `_request`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypeVar

import httpx
from pydantic import BaseModel

from haico.client import routes
from haico.client.routes import Route
from haico.schemas.coding import (
    AgreementOut,
    CodebookOut,
    CodeSuggestion,
    CodingOut,
    JudgmentOut,
)

M = TypeVar("M", bound=BaseModel)
Dataset = Literal["qdpx", "tree", "preferences", "parquet"]
_FAMILY = {
    "qdpx": (routes.FAMILY_QDPX, None),
    "tree": (routes.FAMILY_JSONL, "tree"),
    "preferences": (routes.FAMILY_JSONL, "preferences"),
    "parquet": (routes.FAMILY_PARQUET, None),
}
_STUDY = {
    "qdpx": (routes.STUDY_QDPX, None),
    "tree": (routes.STUDY_JSONL, "tree"),
    "preferences": (routes.STUDY_JSONL, "preferences"),
    "parquet": (routes.STUDY_PARQUET, None),
}


class CodingCalls:
    def _request(
        self,
        route: Route,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        **params: object,
    ) -> httpx.Response:
        raise NotImplementedError  # `Client` sends it

    def _one(self, model: type[M], route: Route, **kw: Any) -> M:
        return model.model_validate_json(self._request(route, **kw).content)

    def _all(self, model: type[M], route: Route, **kw: Any) -> list[M]:
        return [model.model_validate(x) for x in self._request(route, **kw).json()]

    def codebooks(self, thread_id: str | None = None) -> list[CodebookOut]:
        """The caller's codebooks, or those a family's codings draw on."""
        return self._all(CodebookOut, routes.CODEBOOKS, query={"thread_id": thread_id})

    def create_codebook(self, name: str, codes: list[dict[str, Any]] | None = None) -> CodebookOut:
        body = {"name": name, "codes": codes or []}
        return self._one(CodebookOut, routes.CREATE_CODEBOOK, body=body)

    def edit_codebook(self, codebook_id: int, **change: Any) -> CodebookOut:
        """`name=`, `add=[{name, …}]`, `rename=[{id, name}]`, `retire=[id]`."""
        return self._one(CodebookOut, routes.EDIT_CODEBOOK, body=change, codebook_id=codebook_id)

    def code_suggestions(self) -> list[CodeSuggestion]:
        return self._all(CodeSuggestion, routes.CODE_SUGGESTIONS)

    def code(
        self,
        thread_id: str,
        k: int,
        code_id: int,
        *,
        span: tuple[Literal["user_message", "reply"], int, int] | None = None,
        memo: str | None = None,
    ) -> CodingOut:
        """Code step `k` of the thread's path; `span=(field, start, end)` in code points."""
        body: dict[str, Any] = {"code_id": code_id}
        if span is not None:
            body["span"] = {"field": span[0], "start": span[1], "end": span[2]}
        if memo is not None:
            body["memo"] = memo
        return self._one(CodingOut, routes.ADD_CODING, body=body, thread_id=thread_id, k=k)

    def codings(self, thread_id: str) -> list[CodingOut]:
        return self._all(CodingOut, routes.CODINGS, thread_id=thread_id)

    def delete_coding(self, coding_id: int) -> None:
        self._request(routes.DELETE_CODING, coding_id=coding_id)

    def agreement(self, thread_id: str, coders: list[str] | None = None) -> AgreementOut:
        query = {"coders": ",".join(coders) if coders else None}
        return self._one(AgreementOut, routes.AGREEMENT, query=query, thread_id=thread_id)

    def study_agreement(self, study_id: str, coders: list[str] | None = None) -> AgreementOut:
        query = {"coders": ",".join(coders) if coders else None}
        return self._one(AgreementOut, routes.STUDY_AGREEMENT, query=query, study_id=study_id)

    def judge(
        self,
        thread_id: str,
        a: str,
        b: str,
        preferred: Literal["a", "b", "tie"],
        *,
        criterion: str | None = None,
        rationale: str | None = None,
    ) -> JudgmentOut:
        body = {"a": a, "b": b, "preferred": preferred}
        extra = {"criterion": criterion, "rationale": rationale}
        body |= {k: v for k, v in extra.items() if v is not None}
        return self._one(JudgmentOut, routes.ADD_JUDGMENT, body=body, thread_id=thread_id)

    def judgments(self, thread_id: str) -> list[JudgmentOut]:
        return self._all(JudgmentOut, routes.JUDGMENTS, thread_id=thread_id)

    def dataset(self, thread_id: str, kind: Dataset) -> bytes:
        """A family's `.qdpx`, tree or preference JSONL, or Parquet, as bytes."""
        route, fmt = _FAMILY[kind]
        return self._request(route, query={"format": fmt}, thread_id=thread_id).content

    def study_dataset(self, study_id: str, kind: Dataset) -> bytes:
        route, fmt = _STUDY[kind]
        return self._request(route, query={"format": fmt}, study_id=study_id).content
