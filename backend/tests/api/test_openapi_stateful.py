"""Stateful fuzzing of the REST API: schemathesis chains operations through the links
it infers from the OpenAPI document (create → turn, branch, fork, checkout, edit,
delete, …), passing real ids from one answer to the next, with a valid token.

Every step must answer without a server error, with a declared status, content type
and schema; a deleted thread must be gone (use after free) and a created one must be
readable (resource availability).

Scenarios are independent: each has its own user, and the client-chosen ids it draws
for `POST /api/conversations` (`new_id`) are its own too. Hypothesis draws the same
few ids in many scenarios (and replays a scenario to check it), but thread ids are
global: without that, a replay found its id taken by an earlier scenario (409, no
thread, an empty bundle) and stopped drawing where the first run went on, which
Hypothesis rejects as flaky data generation. For the same reason a turn's stream is
read to its end before the next step, as a client reads it: the step after a turn then
finds the turn closed, whatever the timing. CI runs a short campaign on both databases;
the longer one in docs/reliability.md is the same test with HAICO_FUZZ_STATEFUL_EXAMPLES
raised.
"""

from __future__ import annotations

import asyncio
import os
import re
import uuid
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, Phase
from hypothesis import settings as hypothesis_settings
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import use_after_free

from haico.config import Settings
from haico.db.engine import Database
from haico.services.access import users
from tests.api.test_openapi_contract import (  # noqa: F401 (a fixture, used by name)
    POSITIVE_CHECKS,
    threaded_server,
    unfolded_long_patterns,
)

THREAD_ID = re.compile(r"th_[0-9a-f]{32}")
# 50: at 25 the walk reached some chained operations with a 2xx only two or three
# times on PostgreSQL, and after some other tests in the same process not at all
# (docs/reliability.md).
EXAMPLES = int(os.environ.get("HAICO_FUZZ_STATEFUL_EXAMPLES", "50"))
STEPS = int(os.environ.get("HAICO_FUZZ_STATEFUL_STEPS", "8"))
CHECKS = [*POSITIVE_CHECKS, use_after_free]
# A turn's stream ends with the turn (`turn_completed` or `error`, sent once its close
# is committed). schemathesis reads 20 events of a stream and then hangs up; an offline
# turn sends 21 (fewer when its text queues up and leaves in one event), so a scenario
# went on while its turn was still closing and the next step raced the close: on
# PostgreSQL a checkout was a 409 or a history showed the turn still running, or not,
# depending on timing (docs/reliability.md). Every event is read, as a client reads
# them before its next step; the request's timeout still bounds the read.
STREAM_EVENTS = 1_000_000
# The scenario's vocabulary: the operations that change the family's history, plus
# reads that show it and a delete (use after free). Fewer operations leave the linked
# transitions (real ids) a larger share of the steps; the others are fuzzed one by one
# in test_openapi_contract.py.
OPERATIONS = {
    "POST /api/conversations",
    "GET /api/conversations/{thread_id}",
    "POST /api/conversations/{thread_id}/turns",
    "POST /api/conversations/{thread_id}/branch",
    "POST /api/conversations/{thread_id}/fork",
    "POST /api/conversations/{thread_id}/checkout",
    "GET /api/conversations/{thread_id}/graph",
    "GET /api/conversations/{thread_id}/history",
    "GET /api/conversations/{thread_id}/workspace",
    "PUT /api/conversations/{thread_id}/objective",
    "DELETE /api/conversations/{thread_id}",
}
# Operations the scenarios must reach through links (not only with random ids).
CHAINED = {
    "POST /api/conversations/{thread_id}/turns",
    "POST /api/conversations/{thread_id}/branch",
    "POST /api/conversations/{thread_id}/fork",
    "POST /api/conversations/{thread_id}/checkout",
    "GET /api/conversations/{thread_id}/graph",
    "PUT /api/conversations/{thread_id}/objective",
}


def _token(settings: Settings) -> str:
    async def make() -> str:
        db = Database(settings.sql_url)
        try:
            _, token = await users.create(db, name=f"fuzz-{uuid.uuid4().hex[:8]}")
        finally:
            await db.dispose()
        return token

    return asyncio.run(make())


@pytest.mark.usefixtures("unfolded_long_patterns")
def test_stateful_sequences_find_no_violation(settings: Settings, backend: str) -> None:
    settings = settings.model_copy(update={"auth": "token"})
    calls: dict[str, dict[int, int]] = {}
    failures: list[str] = []
    with threaded_server(settings) as base:
        schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
        # A turn's stream is read to its end (STREAM_EVENTS).
        schema.config.max_stream_events = STREAM_EVENTS
        schema = schema.include(
            lambda ctx: f"{ctx.operation.method.upper()} {ctx.operation.path}" in OPERATIONS
        )
        machine = schema.as_state_machine()

        class Scenario(machine):  # type: ignore[valid-type,misc]
            token = ""
            new_ids: dict[str, str] = {}  # noqa: RUF012 (replaced in setup)
            answered: set[str] = set()  # noqa: RUF012 (replaced in setup)

            def setup(self) -> None:
                # A fresh user per scenario: what a scenario sees (its list of
                # conversations included) depends only on its own steps, so a replayed
                # scenario behaves as it did the first time.
                self.token = _token(settings)
                self.new_ids = {}
                self.answered = set()

            def before_call(self, case: Any) -> None:
                # The same reasoning for the ids a scenario chooses: a drawn `new_id`
                # (or the drawn id of a send that creates its conversation) stands for a
                # fresh id of this scenario (drawn twice here, it is taken the second
                # time, as it would be for any client). Ids the server answered with
                # are real and pass unchanged.
                body = case.body
                if isinstance(body, dict) and isinstance(body.get("new_id"), str):
                    body["new_id"] = self._own(body["new_id"])
                params = case.path_parameters or {}
                creates = str((case.query or {}).get("create", "")).lower() == "true"
                drawn = params.get("thread_id")
                if creates and isinstance(drawn, str) and drawn not in self.answered:
                    params["thread_id"] = self._own(drawn)

            def _own(self, drawn: str) -> str:
                return self.new_ids.setdefault(drawn, f"th_{uuid.uuid4().hex}")

            def get_call_kwargs(self, case: Any) -> dict[str, Any]:
                return {
                    "base_url": base,
                    "timeout": 60,
                    "headers": {"Authorization": f"Bearer {self.token}"},
                }

            def after_call(self, response: Any, case: Any) -> None:
                super().after_call(response, case)
                self.answered.update(THREAD_ID.findall(response.text))
                label = f"{case.method} {case.path}"
                statuses = calls.setdefault(label, {})
                statuses[response.status_code] = statuses.get(response.status_code, 0) + 1

            def validate_response(self, response: Any, case: Any, **kwargs: Any) -> None:
                try:
                    case.validate_response(
                        response,
                        checks=CHECKS,
                        transport_kwargs=kwargs or None,
                        recorder=self.recorder,
                    )
                except (FailureGroup, AssertionError) as exc:  # collected, reported below
                    failures.append(
                        f"{case.method} {response.request.url} → {response.status_code} "
                        f"{response.text[:200]!r}: {str(exc)[:500]}"
                    )

        Scenario.run(
            settings=hypothesis_settings(
                max_examples=EXAMPLES,
                stateful_step_count=STEPS,
                deadline=None,
                database=None,
                derandomize=True,
                suppress_health_check=list(HealthCheck),
                phases=(Phase.explicit, Phase.generate),
            )
        )
    total = sum(sum(s.values()) for s in calls.values())
    print(f"\n[stateful] {len(calls)} operations, {total} calls")
    for label, statuses in sorted(calls.items()):
        print(f"  {sum(statuses.values()):5d}  {label}  {dict(sorted(statuses.items()))}")
    assert not failures, "\n".join(failures[:30])
    assert not any(code >= 500 for s in calls.values() for code in s)
    reached = {label for label, s in calls.items() if any(200 <= c < 300 for c in s)}
    assert reached >= CHAINED, CHAINED - reached
