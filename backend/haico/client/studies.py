"""`Client`'s study calls: make and list studies, their members, joining by link (a
participant's session), the participants table, the figures per condition and the
study's CSV. A mixin of `Client`, which answers `_request`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel

from haico.client import routes
from haico.client.routes import Route
from haico.schemas.studies import JoinOut, MemberOut, ParticipantMe, StudyOut
from haico.schemas.study_reports import ParticipantRow, StudyMetrics

M = TypeVar("M", bound=BaseModel)


class StudyCalls:
    def _request(
        self,
        route: Route,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        **params: object,
    ) -> httpx.Response:
        raise NotImplementedError  # `Client` sends it

    def _model(self, model: type[M], route: Route, **kw: Any) -> M:
        return model.model_validate_json(self._request(route, **kw).content)

    def _models(self, model: type[M], route: Route, **kw: Any) -> list[M]:
        return [model.model_validate(x) for x in self._request(route, **kw).json()]

    # ---- the researcher's side (token mode: a user's API token) ----

    def create_study(self, name: str, conditions: list[dict[str, Any]], **rest: Any) -> StudyOut:
        """A study: `conditions` as `[{"name", "profile_id"?, "features"?}]`; `rest` takes
        `description`, `task`, `consent`, `codebook_id`."""
        body = {"name": name, "conditions": conditions, **rest}
        return self._model(StudyOut, routes.CREATE_STUDY, body=body)

    def studies(self) -> list[StudyOut]:
        """The studies the caller owns or is a member of."""
        return self._models(StudyOut, routes.STUDIES)

    def study(self, study_id: str) -> StudyOut:
        return self._model(StudyOut, routes.GET_STUDY, study_id=study_id)

    def edit_study(self, study_id: str, **change: Any) -> StudyOut:
        """`name`, `description`, `state` ("open" | "closed"), `reveal`."""
        return self._model(StudyOut, routes.EDIT_STUDY, body=change, study_id=study_id)

    def add_member(self, study_id: str, user: str, role: str) -> MemberOut:
        """`role`: "coder" or "viewer"."""
        body = {"user": user, "role": role}
        return self._model(MemberOut, routes.ADD_MEMBER, body=body, study_id=study_id)

    def members(self, study_id: str) -> list[MemberOut]:
        return self._models(MemberOut, routes.MEMBERS, study_id=study_id)

    def remove_member(self, study_id: str, user: str) -> None:
        self._request(routes.REMOVE_MEMBER, study_id=study_id, user=user)

    def participants(self, study_id: str) -> list[ParticipantRow]:
        return self._models(ParticipantRow, routes.PARTICIPANTS, study_id=study_id)

    def study_metrics(self, study_id: str) -> StudyMetrics:
        return self._model(StudyMetrics, routes.STUDY_METRICS, study_id=study_id)

    def study_csv(self, study_id: str) -> str:
        """The analysis CSV of every participant's family (`participant`, `condition`
        first; no user name, no token)."""
        return self._request(routes.STUDY_CSV, study_id=study_id).text

    # ---- a participant's side ----

    def join(self, join_token: str) -> JoinOut:
        """Join by the study's link token (`st_…`); needs no credential. The answer's
        `token` (`pt_…`) is the participant's: `Client(base_url, token=answer.token)`."""
        return self._model(JoinOut, routes.JOIN, body={"token": join_token})

    def me(self) -> ParticipantMe:
        """A participant's own session: its study, condition (with its features), family."""
        return self._model(ParticipantMe, routes.ME)

    def consent(self) -> ParticipantMe:
        return self._model(ParticipantMe, routes.CONSENT)

    def finish(self) -> ParticipantMe:
        return self._model(ParticipantMe, routes.FINISH)
