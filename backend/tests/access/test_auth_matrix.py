"""Every endpoint × auth mode × caller: owner succeeds, others get 403, anonymous 401."""

from __future__ import annotations

import itertools
import re
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.domain import new_thread_id
from haico.services.access import users
from tests.helpers import Seeded, db_of, local_and_strangers_thread, seed_conversation
from tests.history_helpers import live_server

# (method, path template, json body, expected success status)
ENDPOINTS: list[tuple[str, str, dict[str, Any] | None, int]] = [
    ("GET", "/api/conversations/{tid}", None, 200),
    ("PATCH", "/api/conversations/{tid}", {"title": "x"}, 200),
    ("DELETE", "/api/conversations/{tid}", None, 204),
    ("GET", "/api/conversations/{tid}/workspace", None, 200),
    ("PUT", "/api/conversations/{tid}/objective", {"text": "o"}, 200),
    ("PUT", "/api/conversations/{tid}/document", {"content": "c"}, 200),
    ("POST", "/api/conversations/{tid}/preferences", {"text": "p2"}, 201),
    ("PATCH", "/api/conversations/{tid}/preferences/{pref}", {"locked": True}, 200),
    ("DELETE", "/api/conversations/{tid}/preferences/{pref}", None, 204),
    ("POST", "/api/conversations/{tid}/todos", {"text": "t2"}, 201),
    ("PATCH", "/api/conversations/{tid}/todos/{todo}", {"done": True}, 200),
    ("DELETE", "/api/conversations/{tid}/todos/{todo}", None, 204),
    ("GET", "/api/conversations/{tid}/artifacts/{art}", None, 200),
    ("POST", "/api/conversations/{tid}/turns", {"content": "objective: x"}, 200),
    # Authorized, but nothing is running: the owner gets the conflict, not 403/401.
    ("POST", "/api/conversations/{tid}/turns/cancel", None, 409),
    ("GET", "/api/conversations/{tid}/messages", None, 200),
    ("POST", "/api/conversations/{tid}/branch", {"from_turn": 0}, 201),
    ("POST", "/api/conversations/{tid}/fork", {"from_turn": 0}, 201),
    ("GET", "/api/conversations/{tid}/history", None, 200),
    ("POST", "/api/conversations/{tid}/checkout", {"turn_id": None}, 200),
    ("GET", "/api/conversations/{tid}/graph", None, 200),
    ("GET", "/api/conversations/{tid}/compare?a={tid}:0&b={tid}:0", None, 200),
    ("GET", "/api/conversations/{tid}/export", None, 200),
    # The research ledger. The seed has no turn: its owner is let through to the 404.
    ("GET", "/api/conversations/{tid}/nodes/1", None, 404),
    ("POST", "/api/conversations/{tid}/nodes/1/notes", {"text": "n"}, 404),
    ("GET", "/api/conversations/{tid}/notes", None, 200),
    ("GET", "/api/conversations/{tid}/edits", None, 200),
    ("GET", "/api/conversations/{tid}/usage", None, 200),
    ("GET", "/api/conversations/{tid}/export.csv", None, 200),
    ("GET", "/api/conversations/{tid}/path", None, 200),
    # Authorized, but the source node does not exist: the owner gets 404 for it.
    (
        "POST",
        "/api/conversations/{tid}/merge",
        {"source": f"th_{'0' * 32}:1", "mode": "merge", "preview": True},
        404,
    ),
    # Authorized, but the seed has no step 1 to undo: its owner gets the 404.
    ("POST", "/api/conversations/{tid}/merge/1/revert", {}, 404),
    ("PATCH", "/api/conversations/{tid}", {"archived": True}, 200),
    ("GET", "/api/conversations/{tid}/suggestions", None, 200),
    ("GET", "/api/conversations/{tid}/chosen-path", None, 200),
    # Authorized, but no such node in the family: the owner gets 404, not 403/401.
    ("PUT", "/api/conversations/{tid}/chosen-path", {"node_id": f"th_{'0' * 32}:1"}, 404),
    # What if. The seed has no turn: its owner is let through to the 404.
    (
        "POST",
        "/api/conversations/{tid}/replay",
        {"from_node": f"th_{'0' * 32}:1", "to_node": f"th_{'0' * 32}:1", "profile_id": "default"},
        404,
    ),
    ("GET", "/api/conversations/{tid}/jobs", None, 200),
    ("GET", "/api/conversations/{tid}/compare-paths?a={tid}:1&b={tid}:1", None, 404),
    ("PATCH", "/api/conversations/{tid}", {"profile_id": "default"}, 200),
    # Coding and datasets. No coding yet: the owner's agreement is 422 (fewer than two
    # coders); no turn: its coding is 404 and its judgment of no node 422.
    ("GET", "/api/conversations/{tid}/codings", None, 200),
    ("POST", "/api/conversations/{tid}/nodes/1/codings", {"code_id": 1}, 404),
    ("GET", "/api/conversations/{tid}/agreement", None, 422),
    (
        "POST",
        "/api/conversations/{tid}/judgments",
        {"a": f"th_{'0' * 32}:1", "b": f"th_{'0' * 32}:2", "preferred": "a"},
        422,
    ),
    ("GET", "/api/conversations/{tid}/judgments", None, 200),
    ("GET", "/api/conversations/{tid}/export.qdpx", None, 200),
    ("GET", "/api/conversations/{tid}/export.jsonl", None, 200),
    ("GET", "/api/conversations/{tid}/export.parquet", None, 200),
    # Sharing (token mode only: with auth off they answer 400, `test_shares.py`).
    ("POST", "/api/conversations/{tid}/shares", {"role": "viewer"}, 201),
    ("GET", "/api/conversations/{tid}/shares", None, 200),
]
SHARING = {"/api/conversations/{tid}/shares"}
# Endpoints that are not about one thread: checked for 401 only.
UNSCOPED = [
    ("GET", "/api/conversations"),
    ("POST", "/api/conversations"),
    ("GET", "/api/search"),
    ("POST", "/api/conversations/import"),
    ("GET", "/api/codes"),
    ("GET", "/api/export.csv"),
    ("GET", "/api/codebooks"),
    ("POST", "/api/codebooks"),
    ("GET", "/api/codebooks/suggestions"),
]
PUBLIC = {("GET", "/api/health")}
# An endless stream: covered by `test_events_stream_auth` over a real socket.
COVERED_ELSEWHERE: set[tuple[str, str]] = {
    ("GET", "/api/conversations/{tid}/events"),
    # A note is named by its own id: `test_note_endpoints_token_mode`.
    ("PATCH", "/api/notes/{note_id}"),
    ("DELETE", "/api/notes/{note_id}"),
    # Profiles and jobs are named by their own ids: tests/whatif/test_whatif_tokens.py.
    ("GET", "/api/profiles"),
    ("POST", "/api/profiles"),
    ("GET", "/api/profiles/{profile_id}"),
    ("PATCH", "/api/profiles/{profile_id}"),
    ("DELETE", "/api/profiles/{profile_id}"),
    ("GET", "/api/jobs/{job_id}"),
    ("POST", "/api/jobs/{job_id}/cancel"),
    # A share is named by its own id: `test_shares.py::test_only_the_owner_manages_shares`.
    ("DELETE", "/api/shares/{share_id}"),
    # Studies (token mode only; named by their own ids, or a participant's own session):
    # tests/studies (owner, members, strangers' 404, participants, auth off → 400).
    ("POST", "/api/studies"),
    ("GET", "/api/studies"),
    ("GET", "/api/studies/{study_id}"),
    ("PATCH", "/api/studies/{study_id}"),
    ("POST", "/api/studies/{study_id}/members"),
    ("GET", "/api/studies/{study_id}/members"),
    ("DELETE", "/api/studies/{study_id}/members/{user}"),
    ("POST", "/api/studies/join"),
    ("GET", "/api/studies/participants/me"),
    ("POST", "/api/studies/participants/me/consent"),
    ("POST", "/api/studies/participants/me/finish"),
    # tests/studies/test_study_reports.py (owner, viewer, coder, strangers' 404, a link's
    # and a participant's 403, anonymous 401).
    ("GET", "/api/studies/{study_id}/participants"),
    ("GET", "/api/studies/{study_id}/metrics"),
    ("GET", "/api/studies/{study_id}/export.csv"),
    ("GET", "/api/studies/{study_id}/events"),
    # Codebooks and codings named by their own ids, and a study's coding: tests/coding
    # (another's codebook 404, a stranger's delete 404, a stranger's study 404).
    ("GET", "/api/codebooks/{codebook_id}"),
    ("PATCH", "/api/codebooks/{codebook_id}"),
    ("DELETE", "/api/codings/{coding_id}"),
    ("GET", "/api/studies/{study_id}/agreement"),
    ("GET", "/api/studies/{study_id}/export.qdpx"),
    ("GET", "/api/studies/{study_id}/export.jsonl"),
    ("GET", "/api/studies/{study_id}/export.parquet"),
}


def _path(template: str, s: Seeded) -> str:
    return template.format(tid=s.thread_id, pref=s.pref_id, todo=s.todo_id, art=s.artifact_id)


def _all_routes(app: FastAPI) -> set[tuple[str, str]]:
    """Every API operation, read from the OpenAPI schema (it sees through included routers)."""
    out = set()
    for path, operations in app.openapi()["paths"].items():
        if path.startswith("/api"):
            for method in operations:
                out.add((method.upper(), path))
    return out


def _template(path: str) -> str:
    return (
        path.replace("{thread_id}", "{tid}")
        .replace("{pref_id}", "{pref}")
        .replace("{todo_id}", "{todo}")
        .replace("{artifact_id}", "{art}")
        .replace("{k}", "1")
    )


async def test_matrix_covers_every_route(app: FastAPI) -> None:
    covered = {(m, p.split("?")[0]) for m, p, _, _ in ENDPOINTS} | set(UNSCOPED) | PUBLIC
    routes = {(m, _template(p)) for m, p in _all_routes(app)} - COVERED_ELSEWHERE
    assert len(routes) > 20  # the schema really lists the API
    missing = routes - covered
    assert not missing, f"add these routes to the auth matrix: {sorted(missing)}"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


@pytest.fixture(scope="module")
def module_settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


def _no_data(r: httpx.Response) -> None:
    """A refusal says what went wrong and nothing of the thread's content."""
    body = r.json()
    assert set(body) == {"code", "message"}, body
    assert "seed" not in body["message"].lower(), body


def _common_prefix(a: str, b: str) -> int:
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), len(a))


def test_thread_ids_are_unguessable() -> None:
    """122 random bits (uuid4) per id: none repeats, none follows from another."""
    ids = [new_thread_id() for _ in range(20_000)]
    assert len(set(ids)) == len(ids)
    for tid in ids[:200]:
        assert re.fullmatch(r"th_[0-9a-f]{32}", tid), tid
        assert uuid.UUID(hex=tid[3:]).version == 4
    # Consecutive ids share no long prefix (no counter or clock in them).
    shared = [_common_prefix(a, b) - 3 for a, b in itertools.pairwise(ids)]
    assert max(shared) < 8


@pytest.mark.parametrize(("method", "template", "body", "ok"), ENDPOINTS)
async def test_token_mode(
    module_app: FastAPI,
    module_client: httpx.AsyncClient,
    method: str,
    template: str,
    body: dict[str, Any] | None,
    ok: int,
) -> None:
    app, client = module_app, module_client  # fresh users and family: none sees another's
    db = db_of(app)
    owner, owner_token = await users.create(db, name=f"owner-{uuid.uuid4().hex[:8]}")
    _, other_token = await users.create(db, name=f"other-{uuid.uuid4().hex[:8]}")
    seeded = await seed_conversation(app, owner)
    path = _path(template, seeded)

    r = await client.request(method, path, json=body)
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    _no_data(r)
    r = await client.request(method, path, json=body, headers={"Authorization": "Bearer nope"})
    assert r.status_code == 401
    _no_data(r)
    r = await client.request(
        method, path, json=body, headers={"Authorization": f"Bearer {other_token}"}
    )
    assert r.status_code == 403 and r.json()["code"] == "forbidden"
    _no_data(r)
    r = await client.request(
        method, path, json=body, headers={"Authorization": f"Bearer {owner_token}"}
    )
    assert r.status_code == ok, r.text


async def test_token_mode_unscoped(app: FastAPI, client: httpx.AsyncClient) -> None:
    db = db_of(app)
    _, token_a = await users.create(db, name=f"a-{uuid.uuid4().hex[:8]}")
    _, token_b = await users.create(db, name=f"b-{uuid.uuid4().hex[:8]}")
    for method, path in UNSCOPED:
        body = {"title": "x"} if method == "POST" else None
        assert (await client.request(method, path, json=body)).status_code == 401
    ha = {"Authorization": f"Bearer {token_a}"}
    hb = {"Authorization": f"Bearer {token_b}"}
    created = (await client.post("/api/conversations", json={"title": "mine"}, headers=ha)).json()
    assert [
        c["thread_id"] for c in (await client.get("/api/conversations", headers=ha)).json()
    ] == [created["thread_id"]]
    assert (await client.get("/api/conversations", headers=hb)).json() == []
    assert (await client.get("/api/health")).status_code == 200


@pytest.mark.parametrize(
    ("method", "template", "body", "ok"), [e for e in ENDPOINTS if e[1] not in SHARING]
)
async def test_no_auth_mode(
    app: FastAPI,
    client: httpx.AsyncClient,
    method: str,
    template: str,
    body: dict[str, Any] | None,
    ok: int,
) -> None:
    """Auth off: the anonymous caller is the local user; others' threads stay 403."""
    foreign = await local_and_strangers_thread(app)
    r = await client.request(method, _path(template, foreign), json=body)
    assert r.status_code == 403, r.text
    mine = await seed_conversation(app, app.state.local_user)
    r = await client.request(method, _path(template, mine), json=body)
    assert r.status_code == ok, r.text


async def test_events_stream_auth(app: FastAPI, client: httpx.AsyncClient) -> None:
    """The event stream answers 401/403 before streaming, and streams for its owner."""
    db = db_of(app)
    owner, owner_token = await users.create(db, name=f"ev-{uuid.uuid4().hex[:8]}")
    _, other_token = await users.create(db, name=f"eo-{uuid.uuid4().hex[:8]}")
    seeded = await seed_conversation(app, owner)
    path = f"/api/conversations/{seeded.thread_id}/events"
    assert (await client.get(path)).status_code == 401
    r = await client.get(path, headers={"Authorization": f"Bearer {other_token}"})
    assert r.status_code == 403
    async with (
        live_server(app) as base,
        httpx.AsyncClient(base_url=base, timeout=10) as c,
        c.stream("GET", path, headers={"Authorization": f"Bearer {owner_token}"}) as r,
    ):
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")


async def test_note_endpoints_token_mode(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A note's own endpoints: 401 without a token, 404 for a user who cannot read its
    family, the owner's edit and delete go through."""
    from sqlalchemy import select

    from haico.db.models import Conversation, Note, WorkspaceSnapshot
    from haico.domain import NodeState

    db = db_of(app)
    owner, owner_token = await users.create(db, name=f"no-{uuid.uuid4().hex[:8]}")
    _, other_token = await users.create(db, name=f"nx-{uuid.uuid4().hex[:8]}")
    seeded = await seed_conversation(app, owner)
    async with db.transaction() as s:
        s.add(WorkspaceSnapshot(thread_id=seeded.thread_id, turn_index=1, state=NodeState.COMPLETE))
        # The thread's clock at that node, so the database stays consistent for the
        # whole-database checks later tests in this process run.
        conv = await s.get(Conversation, seeded.thread_id)
        assert conv is not None
        conv.turn_index = 1
        s.add(
            Note(
                user_id=owner.id,
                root_thread_id=seeded.thread_id,
                thread_id=seeded.thread_id,
                turn_index=1,
                text="mine",
                codes=[],
                author="o",
            )
        )
    async with db.read() as s:
        note_id = (await s.execute(select(Note.id))).scalars().all()[-1]
    path = f"/api/notes/{note_id}"
    owner_h = {"Authorization": f"Bearer {owner_token}"}
    other_h = {"Authorization": f"Bearer {other_token}"}
    for method, body in (("PATCH", {"text": "x"}), ("DELETE", None)):
        assert (await client.request(method, path, json=body)).status_code == 401
        r = await client.request(method, path, json=body, headers=other_h)
        assert r.status_code == 404
        _no_data(r)
    r = await client.patch(path, json={"text": "edited"}, headers=owner_h)
    assert r.status_code == 200 and r.json()["text"] == "edited"
    assert (await client.delete(path, headers=owner_h)).status_code == 204
