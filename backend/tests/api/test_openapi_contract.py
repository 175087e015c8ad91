"""The REST contract as a client generator sees it: schemathesis over `/openapi.json`.

Every operation except the two event streams is fuzzed against a real server (the app
served by uvicorn in a thread, with its own lifespan) on each database: positive and
negative examples, with the ids of a seeded conversation (so the calls reach past the
ownership check and bodies reach storage) and, on SQLite, with random path
parameters. The run must find no server
error, no response that breaks its declared schema or content type, and no status the
operation does not declare; negative examples must be rejected.

Where the time went: drawing the examples, not serving them. A string that is both
length-capped and patterned (most text fields: `maxLength` 100000, no NUL) was folded by
schemathesis into one counted regex, recompiled for every negative body (about a second
per draw); `unfolded_long_patterns` keeps the two keywords apart. The random-id pass,
whose calls stop at the 404 or 422 of the path parameters, draws a quarter of the
examples and is a test of its own on SQLite (the two workers of the suite run it
beside the seeded pass), and the seeded
conversation is made once and again only after a DELETE may have removed it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
import schemathesis
import schemathesis.specs.openapi.converter as schemathesis_converter
import uvicorn
from hypothesis import HealthCheck, Phase, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.core.failures import FailureGroup
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from haico.config import Settings
from haico.main import create_app
from tests.history_helpers import free_port

# per operation, per generation mode, per kind of path parameters (a longer run:
# HAICO_FUZZ_EXAMPLES=100, see docs/reliability.md)
EXAMPLES = int(os.environ.get("HAICO_FUZZ_EXAMPLES", "12"))
# The pass with drawn path parameters reaches only their 404 or 422: a quarter as many.
DRAWN_EXAMPLES = max(3, EXAMPLES // 4)
STREAMS = {"/api/conversations/{thread_id}/turns", "/api/conversations/{thread_id}/events"}
POSITIVE_CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]
NEGATIVE_CHECKS = [*POSITIVE_CHECKS, negative_data_rejection]
MODES = ((GenerationMode.POSITIVE, POSITIVE_CHECKS), (GenerationMode.NEGATIVE, NEGATIVE_CHECKS))


@contextlib.contextmanager
def threaded_server(settings: Settings) -> Iterator[str]:
    """The app on a real socket, with its lifespan, in a thread with its own loop."""
    port = free_port()
    config = uvicorn.Config(
        create_app(settings), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive(), "server thread exited"
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def seed(base: str) -> dict[str, Any]:
    """A conversation with a preference, a todo and one turn; its ids as path params."""
    with httpx.Client(base_url=base, timeout=30) as c:
        tid = c.post("/api/conversations", json={"title": "seed"}).json()["thread_id"]
        pref = c.post(f"/api/conversations/{tid}/preferences", json={"text": "p"}).json()
        todo = c.post(f"/api/conversations/{tid}/todos", json={"text": "t"}).json()
        with c.stream(
            "POST", f"/api/conversations/{tid}/turns", json={"content": "artifact A: body"}
        ) as r:
            r.read()
        ws = c.get(f"/api/conversations/{tid}/workspace").json()
    artifact = ws["artifacts"][0]["id"] if ws["artifacts"] else 1
    return {
        "thread_id": tid,
        "pref_id": pref["id"],
        "todo_id": todo["id"],
        "artifact_id": artifact,
    }


@dataclass
class Tally:
    calls: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)
    unsatisfiable: list[str] = field(default_factory=list)


SEEDED = ("thread_id", "pref_id", "todo_id", "artifact_id")  # the keys `seed` answers


def fuzz(base: str, tally: Tally, *, random_ids: bool) -> None:
    """One pass over every operation: with the seeded ids (`random_ids` false; an
    operation naming none of them draws its own), or with drawn ids for the operations
    that name a seeded one (the other pass covers the rest)."""
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    rejection = schema.config.checks.negative_data_rejection
    # An over-long body is rejected before it is parsed, with 413.
    rejection.expected_statuses = [*rejection.expected_statuses, "413"]
    operations = [
        result.ok() for result in schema.get_all_operations() if result.ok().path not in STREAMS
    ]
    assert len(operations) >= 17, [op.label for op in operations]
    ids: dict[str, Any] = {}
    for op in operations:
        # One seeded conversation, made again after a DELETE (which may remove it or
        # its preference or todo); the other operations leave its ids valid.
        names_seeded = any(f"{{{k}}}" in op.path for k in SEEDED)
        if random_ids:
            if names_seeded:
                for mode, checks in MODES:
                    strategy = op.as_strategy(generation_mode=mode)
                    run_one(op.label, strategy, checks, base, tally, DRAWN_EXAMPLES)
            continue
        if "{thread_id}" in op.path and not ids:
            ids = seed(base)
        real = {k: v for k, v in ids.items() if f"{{{k}}}" in op.path}
        for mode, checks in MODES:
            strategy = op.as_strategy(generation_mode=mode, path_parameters=real or None)
            run_one(op.label, strategy, checks, base, tally, EXAMPLES)
        if op.method.upper() == "DELETE":
            ids = {}


def run_one(
    label: str,
    strategy: st.SearchStrategy[Any],
    checks: list[Any],
    base: str,
    tally: Tally,
    examples: int,
) -> None:
    @hypothesis_settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
        phases=(Phase.explicit, Phase.generate),
    )
    @given(case=strategy)
    def run(case: Any) -> None:
        tally.calls[label] = tally.calls.get(label, 0) + 1
        response = case.call(base_url=base, timeout=30)
        try:
            case.validate_response(response, checks=checks)
        except (FailureGroup, AssertionError) as exc:  # collected, reported at the end
            body = response.text[:300]
            tally.failures.append(
                f"{label} [{case.method} {response.request.url}] "
                f"{response.status_code} {body!r}: {str(exc)[:600]}"
            )

    try:
        run()
    except Unsatisfiable:
        # Nothing to break: an operation without parameters has no negative examples.
        tally.unsatisfiable.append(label)


@pytest.fixture
def unfolded_long_patterns(monkeypatch: pytest.MonkeyPatch) -> None:
    """Leave a long-capped string's `pattern` and `maxLength` apart.

    schemathesis folds the two into one counted regex (`^[^\\x00]{1,100000}$`) that takes
    about a second to compile, and compiles it again for every mutated schema a negative
    body is drawn from. Kept apart, the builder honours `maxLength` itself, the negative
    mutations still break each keyword, and the run takes a fraction of the time.
    Beyond this many characters no drawn string comes near the cap anyway (hypothesis
    draws at most 8 KiB of choices per example)."""
    fold = schemathesis_converter.update_pattern_in_schema

    def fold_short(schema: dict[str, Any]) -> None:
        cap = schema.get("maxLength")
        if not (isinstance(cap, int) and cap > 8192):
            fold(schema)

    monkeypatch.setattr(schemathesis_converter, "update_pattern_in_schema", fold_short)


@pytest.mark.usefixtures("unfolded_long_patterns")
def test_schemathesis_finds_no_contract_violation(settings: Settings) -> None:
    """With the seeded ids, where bodies reach storage, on each database."""
    check_pass(settings, random_ids=False)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
@pytest.mark.usefixtures("unfolded_long_patterns")
def test_schemathesis_with_drawn_ids_finds_no_contract_violation(settings: Settings) -> None:
    """With drawn path parameters, which only ever reach the 404 (or 422) path: the
    same code on both databases, so SQLite (quicker per call) covers it. Its own test
    so that the two passes run side by side on the suite's two workers."""
    check_pass(settings, random_ids=True)


def check_pass(settings: Settings, *, random_ids: bool) -> None:
    examples = DRAWN_EXAMPLES if random_ids else EXAMPLES
    tally = Tally()
    with threaded_server(settings) as base:
        fuzz(base, tally, random_ids=random_ids)
    total = sum(tally.calls.values())
    print(f"\n[schemathesis] {len(tally.calls)} operations, {total} calls")
    for label, n in sorted(tally.calls.items()):
        print(f"  {n:4d}  {label}")
    assert not tally.failures, "\n".join(tally.failures[:40])
    # An operation without parameters has one possible request; the rest get `examples`.
    few = {label: n for label, n in tally.calls.items() if n < examples}
    assert set(few) <= set(tally.unsatisfiable), few
