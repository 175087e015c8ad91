"""Every REST route and every AHP command goes through the one access rule, asking it
for the role (or the deed) it needs.

The routes are read from the app (its OpenAPI document lists every included router's
operations) and the commands from the AHP dispatcher's table, so a new one fails
`test_every_route_and_command_is_walked` until it is given a line in `ROUTES` or
`COMMANDS`. Each route is then called by the family's owner with the rule recording
what it is asked (`rule.settled`, where every family decision starts, and
`rule.permit`): a route that skips the rule, or asks for less than its line says,
fails. The same route called by a commenter's share link must be refused whenever its
line needs more than a link may have.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.ahp.connection import HANDLERS
from haico.db.models_whatif import Job
from haico.services.access import rule
from haico.services.access.principal import Kind, Principal
from haico.services.access.rule import Deed, Role
from tests.ahp.live import chat_of, send, session_of
from tests.ahp.wire import AhpClient
from tests.helpers import db_of, seed_conversation
from tests.history_helpers import live_server
from tests.share_helpers import bearer, new_user

Need = Role | Deed
V, CODE, C, E, OWN = Role.VIEWER, Role.CODER, Role.COMMENTER, Role.EDITOR, Role.OWNER
NODE = "{tid}:1"
NOWHERE = f"th_{'0' * 32}:1"


@dataclass(frozen=True)
class Route:
    """How to call one operation (`{tid}`, `{pref}`, … filled in) and what it asks."""

    path: str
    body: dict[str, Any] | None
    asks: frozenset[Need]


def r(path: str, body: dict[str, Any] | None, *asks: Need) -> Route:
    return Route(path, body, frozenset(asks))


C_ = "/api/conversations/{tid}"
S_ = "/api/studies"
ROUTES: dict[tuple[str, str], Route] = {
    ("GET", "/api/health"): r("/api/health", None),  # public: asks nothing
    ("POST", "/api/conversations"): r("/api/conversations", {"title": "x"}, Deed.CREATE),
    ("GET", "/api/conversations"): r("/api/conversations", None, Deed.LIST),
    ("GET", "/api/conversations/{thread_id}"): r(C_, None, V),
    ("PATCH", "/api/conversations/{thread_id}"): r(C_, {"title": "x"}, E),
    ("DELETE", "/api/conversations/{thread_id}"): r(C_, None, OWN),
    ("GET", "/api/conversations/{thread_id}/workspace"): r(f"{C_}/workspace", None, V),
    ("PUT", "/api/conversations/{thread_id}/objective"): r(f"{C_}/objective", {"text": "o"}, E),
    ("PUT", "/api/conversations/{thread_id}/document"): r(f"{C_}/document", {"content": "c"}, E),
    ("POST", "/api/conversations/{thread_id}/preferences"): r(
        f"{C_}/preferences", {"text": "p2"}, E
    ),
    ("PATCH", "/api/conversations/{thread_id}/preferences/{pref_id}"): r(
        f"{C_}/preferences/{{pref}}", {"locked": True}, E
    ),
    ("DELETE", "/api/conversations/{thread_id}/preferences/{pref_id}"): r(
        f"{C_}/preferences/{{pref}}", None, E
    ),
    ("POST", "/api/conversations/{thread_id}/todos"): r(f"{C_}/todos", {"text": "t2"}, E),
    ("PATCH", "/api/conversations/{thread_id}/todos/{todo_id}"): r(
        f"{C_}/todos/{{todo}}", {"done": True}, E
    ),
    ("DELETE", "/api/conversations/{thread_id}/todos/{todo_id}"): r(
        f"{C_}/todos/{{todo}}", None, E
    ),
    ("GET", "/api/conversations/{thread_id}/artifacts/{artifact_id}"): r(
        f"{C_}/artifacts/{{art}}", None, V
    ),
    ("POST", "/api/conversations/{thread_id}/turns"): r(
        f"{C_}/turns", {"content": "objective: y"}, E
    ),
    ("POST", "/api/conversations/{thread_id}/turns/cancel"): r(f"{C_}/turns/cancel", None, E),
    ("GET", "/api/conversations/{thread_id}/messages"): r(f"{C_}/messages", None, V),
    ("POST", "/api/conversations/{thread_id}/branch"): r(f"{C_}/branch", {"from_turn": 0}, E),
    ("POST", "/api/conversations/{thread_id}/fork"): r(
        f"{C_}/fork", {"from_turn": 0}, V, Deed.FORK
    ),
    ("GET", "/api/conversations/{thread_id}/history"): r(f"{C_}/history", None, V),
    ("POST", "/api/conversations/{thread_id}/checkout"): r(f"{C_}/checkout", {"turn_id": None}, E),
    # An endless stream: called by a stranger, refused at its one question.
    ("GET", "/api/conversations/{thread_id}/events"): r(f"{C_}/events", None, V),
    ("GET", "/api/conversations/{thread_id}/graph"): r(f"{C_}/graph", None, V),
    ("GET", "/api/conversations/{thread_id}/compare"): r(
        f"{C_}/compare?a={NODE}&b={NODE}", None, V
    ),
    ("GET", "/api/search"): r("/api/search?q=seed", None, Deed.LIST),
    ("GET", "/api/conversations/{thread_id}/export"): r(f"{C_}/export", None, V, Deed.EXPORT),
    ("POST", "/api/conversations/import"): r("/api/conversations/import", {}, Deed.IMPORT),
    ("GET", "/api/conversations/{thread_id}/nodes/{k}"): r(f"{C_}/nodes/1", None, V),
    ("POST", "/api/conversations/{thread_id}/nodes/{k}/notes"): r(
        f"{C_}/nodes/1/notes", {"text": "n"}, C
    ),
    ("GET", "/api/conversations/{thread_id}/notes"): r(f"{C_}/notes", None, V),
    # An item named by its own id (a note, a job, a share) asks VIEWER first: a caller
    # who cannot read its family gets 404 naming nothing; then the role it needs.
    ("PATCH", "/api/notes/{note_id}"): r("/api/notes/{note}", {"text": "x"}, V, C),
    ("DELETE", "/api/notes/{note_id}"): r("/api/notes/{note}", None, V, C),
    ("GET", "/api/conversations/{thread_id}/usage"): r(f"{C_}/usage", None, V),
    ("GET", "/api/conversations/{thread_id}/edits"): r(f"{C_}/edits", None, V),
    ("GET", "/api/codes"): r("/api/codes", None, Deed.CODEBOOK),
    ("GET", "/api/conversations/{thread_id}/export.csv"): r(
        f"{C_}/export.csv", None, V, Deed.EXPORT
    ),
    ("GET", "/api/export.csv"): r("/api/export.csv", None, Deed.CODEBOOK),
    ("GET", "/api/conversations/{thread_id}/path"): r(f"{C_}/path", None, V, Deed.EXPORT),
    ("POST", "/api/conversations/{thread_id}/merge"): r(
        f"{C_}/merge", {"source": NOWHERE, "mode": "merge", "preview": True}, E
    ),
    ("POST", "/api/conversations/{thread_id}/merge/{k}/revert"): r(f"{C_}/merge/1/revert", {}, E),
    ("GET", "/api/conversations/{thread_id}/suggestions"): r(f"{C_}/suggestions", None, V),
    ("GET", "/api/conversations/{thread_id}/chosen-path"): r(f"{C_}/chosen-path", None, V),
    ("PUT", "/api/conversations/{thread_id}/chosen-path"): r(
        f"{C_}/chosen-path", {"node_id": NODE}, V
    ),
    ("GET", "/api/profiles"): r("/api/profiles", None, Deed.PROFILES),
    ("POST", "/api/profiles"): r(
        "/api/profiles", {"name": "p", "provider": "offline"}, Deed.PROFILES
    ),
    ("GET", "/api/profiles/{profile_id}"): r("/api/profiles/{profile}", None, Deed.PROFILES),
    ("PATCH", "/api/profiles/{profile_id}"): r(
        "/api/profiles/{profile}", {"name": "q"}, Deed.PROFILES
    ),
    ("DELETE", "/api/profiles/{profile_id}"): r("/api/profiles/{profile}", None, Deed.PROFILES),
    ("POST", "/api/conversations/{thread_id}/replay"): r(
        f"{C_}/replay", {"from_node": NODE, "to_node": NODE, "profile_id": "default"}, E, V
    ),  # the family's editor, then the replay's reads of its steps
    ("GET", "/api/conversations/{thread_id}/jobs"): r(f"{C_}/jobs", None, V),
    ("GET", "/api/jobs/{job_id}"): r("/api/jobs/{job}", None, V),
    ("POST", "/api/jobs/{job_id}/cancel"): r("/api/jobs/{job}/cancel", None, V),
    ("GET", "/api/conversations/{thread_id}/compare-paths"): r(
        f"{C_}/compare-paths?a={NODE}&b={NODE}", None, V
    ),
    ("POST", "/api/conversations/{thread_id}/shares"): r(
        f"{C_}/shares", {"role": "viewer"}, OWN, Deed.SHARE
    ),
    ("GET", "/api/conversations/{thread_id}/shares"): r(f"{C_}/shares", None, OWN, Deed.SHARE),
    ("DELETE", "/api/shares/{share_id}"): r("/api/shares/{share}", None, V, OWN, Deed.SHARE),
    # Studies: the study's own check (owner or member, else 404) under the deed; joining
    # needs no credential and asks nothing; a participant's session is its own deed.
    ("POST", "/api/studies"): r(S_, {"name": "s", "conditions": [{"name": "a"}]}, Deed.STUDIES),
    ("GET", "/api/studies"): r(S_, None, Deed.STUDIES),
    ("GET", "/api/studies/{study_id}"): r(f"{S_}/{{study}}", None, Deed.STUDIES),
    ("PATCH", "/api/studies/{study_id}"): r(f"{S_}/{{study}}", {"name": "x"}, Deed.STUDIES),
    ("POST", "/api/studies/{study_id}/members"): r(
        f"{S_}/{{study}}/members", {"user": "{member}", "role": "coder"}, Deed.STUDIES
    ),
    ("GET", "/api/studies/{study_id}/members"): r(f"{S_}/{{study}}/members", None, Deed.STUDIES),
    ("DELETE", "/api/studies/{study_id}/members/{user}"): r(
        f"{S_}/{{study}}/members/{{member}}", None, Deed.STUDIES
    ),
    ("POST", "/api/studies/join"): r(f"{S_}/join", {"token": "{join}"}),
    ("GET", "/api/studies/participants/me"): r(f"{S_}/participants/me", None, Deed.SESSION),
    ("POST", "/api/studies/participants/me/consent"): r(
        f"{S_}/participants/me/consent", None, Deed.SESSION
    ),
    ("POST", "/api/studies/participants/me/finish"): r(
        f"{S_}/participants/me/finish", None, Deed.SESSION
    ),
    # A study's reading side: the owner or a member, never a link or a participant.
    ("GET", "/api/studies/{study_id}/participants"): r(
        f"{S_}/{{study}}/participants", None, Deed.STUDIES
    ),
    ("GET", "/api/studies/{study_id}/metrics"): r(f"{S_}/{{study}}/metrics", None, Deed.STUDIES),
    ("GET", "/api/studies/{study_id}/export.csv"): r(
        f"{S_}/{{study}}/export.csv", None, Deed.STUDIES
    ),
    ("GET", "/api/studies/{study_id}/events"): r(f"{S_}/{{study}}/events", None, Deed.STUDIES),
    # Coding: codebooks are the caller's own (a deed); codings and judgments a coder's
    # (commenters and up, a study's coders); reads and agreement a reader's; exports a
    # reader's who may export; a study's, its owner's and members'.
    ("POST", "/api/codebooks"): r("/api/codebooks", {"name": "b"}, Deed.CODEBOOK),
    ("GET", "/api/codebooks"): r("/api/codebooks", None, Deed.CODEBOOK),
    ("GET", "/api/codebooks/suggestions"): r("/api/codebooks/suggestions", None, Deed.CODEBOOK),
    ("GET", "/api/codebooks/{codebook_id}"): r("/api/codebooks/{book}", None, Deed.CODEBOOK),
    ("PATCH", "/api/codebooks/{codebook_id}"): r(
        "/api/codebooks/{book}", {"name": "c"}, Deed.CODEBOOK
    ),
    ("POST", "/api/conversations/{thread_id}/nodes/{k}/codings"): r(
        f"{C_}/nodes/1/codings", {"code_id": "{code}"}, CODE, Deed.CODE
    ),
    ("GET", "/api/conversations/{thread_id}/codings"): r(f"{C_}/codings", None, V),
    ("DELETE", "/api/codings/{coding_id}"): r("/api/codings/{coding}", None, V, CODE, Deed.CODE),
    ("GET", "/api/conversations/{thread_id}/agreement"): r(f"{C_}/agreement", None, V),
    ("POST", "/api/conversations/{thread_id}/judgments"): r(
        f"{C_}/judgments", {"a": NODE, "b": NODE, "preferred": "a"}, CODE, Deed.CODE
    ),
    ("GET", "/api/conversations/{thread_id}/judgments"): r(f"{C_}/judgments", None, V),
    ("GET", "/api/conversations/{thread_id}/export.qdpx"): r(
        f"{C_}/export.qdpx", None, V, Deed.EXPORT
    ),
    ("GET", "/api/conversations/{thread_id}/export.jsonl"): r(
        f"{C_}/export.jsonl", None, V, Deed.EXPORT
    ),
    ("GET", "/api/conversations/{thread_id}/export.parquet"): r(
        f"{C_}/export.parquet", None, V, Deed.EXPORT
    ),
    ("GET", "/api/studies/{study_id}/agreement"): r(
        "/api/studies/{study}/agreement", None, Deed.STUDIES
    ),
    ("GET", "/api/studies/{study_id}/export.qdpx"): r(
        "/api/studies/{study}/export.qdpx", None, Deed.EXPORT, Deed.STUDIES
    ),
    ("GET", "/api/studies/{study_id}/export.jsonl"): r(
        "/api/studies/{study}/export.jsonl", None, Deed.EXPORT, Deed.STUDIES
    ),
    ("GET", "/api/studies/{study_id}/export.parquet"): r(
        "/api/studies/{study}/export.parquet", None, Deed.EXPORT, Deed.STUDIES
    ),
}
STRANGER_ONLY = {
    ("GET", "/api/conversations/{thread_id}/events"),
    ("GET", "/api/studies/{study_id}/events"),
}

# AHP: (command, the action type a `dispatchAction` carries) → what it asks.
COMMANDS: dict[tuple[str, str | None], frozenset[Need]] = {
    ("listSessions", None): frozenset({Deed.LIST}),
    ("subscribe", None): frozenset({V}),
    ("unsubscribe", None): frozenset(),  # forgets a subscription: asks nothing
    ("fetchTurns", None): frozenset({V}),
    ("checkoutChatHistory", None): frozenset({E}),
    ("createChat", None): frozenset({V, Deed.FORK}),
    # Makes the family, then reads it to the connection (its first snapshot).
    ("createSession", None): frozenset({Deed.CREATE, V}),
    ("disposeSession", None): frozenset({OWN}),
    ("dispatchAction", "chat/turnStarted"): frozenset({V, E}),
    ("dispatchAction", "annotations/set"): frozenset({C}),
}


def _routes(app: FastAPI) -> set[tuple[str, str]]:
    return {
        (method.upper(), path)
        for path, operations in app.openapi()["paths"].items()
        for method in operations
    }


def test_every_route_and_command_is_walked(app: FastAPI) -> None:
    assert len(_routes(app)) > 50  # the schema really lists the API
    assert _routes(app) == set(ROUTES), "give each new route a line in ROUTES"
    assert set(HANDLERS) == {command for command, _ in COMMANDS}, "and each command one"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


@pytest.fixture(scope="module")
def module_settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


# The list of the block `recorded` runs, set in the test's own context: what the block
# starts inherits it; a task of an earlier test still running in the shared app (a
# replay's job) holds that test's list, and adds nothing to this one.
_RECORDING: ContextVar[list[Need] | None] = ContextVar("recording", default=None)


@contextmanager
def recorded(monkeypatch: pytest.MonkeyPatch, *, any_task: bool = False) -> Iterator[list[Need]]:
    """What the rule is asked while the block runs, by the block and what it starts;
    `any_task`: by any task (a server's connections were started before the block)."""
    asked: list[Need] = []
    settled, permit = rule.settled, rule.permit

    def settled_spy(principal: Principal, conv: Any, need: Role) -> Role | None:
        if any_task or _RECORDING.get() is asked:
            asked.append(need)
        return settled(principal, conv, need)

    def permit_spy(principal: Principal, deed: Deed) -> None:
        if any_task or _RECORDING.get() is asked:
            asked.append(deed)
        permit(principal, deed)

    monkeypatch.setattr(rule, "settled", settled_spy)
    monkeypatch.setattr(rule, "permit", permit_spy)
    token = _RECORDING.set(asked)
    try:
        yield asked
    finally:
        _RECORDING.reset(token)
        monkeypatch.setattr(rule, "settled", settled)
        monkeypatch.setattr(rule, "permit", permit)


def link_may(asks: frozenset[Need]) -> bool:
    """Whether a commenter's link may do what `asks` lists, by the rule's own tables."""
    link = Principal(0, "link", kind=Kind.LINK, family="th_x")
    deeds_ok = all(a not in rule.REFUSED[link.kind] for a in asks if isinstance(a, Deed))
    return deeds_ok and all(a <= Role.COMMENTER for a in asks if isinstance(a, Role))


async def _fill(
    app: FastAPI, client: httpx.AsyncClient, route: Route, owner: Principal, h: dict[str, str]
) -> tuple[str, dict[str, Any]]:
    """The family to call on (one turn in when the call names a node), and what the
    route's path names in it."""
    path = route.path
    seeded = await seed_conversation(app, owner)
    tid = seeded.thread_id
    if any(mark in f"{path} {route.body}" for mark in (NODE, "{note}", "nodes/1", "{coding}")):
        r = await client.post(f"/api/conversations/{tid}/turns", json={"content": "x"}, headers=h)
        assert r.status_code == 200, r.text
    ids: dict[str, Any] = {
        "tid": tid,
        "pref": seeded.pref_id,
        "todo": seeded.todo_id,
        "art": seeded.artifact_id,
    }
    if "{note}" in path:
        made = await client.post(
            f"/api/conversations/{tid}/nodes/1/notes", json={"text": "n"}, headers=h
        )
        ids["note"] = made.json()["id"]
    if any(mark in f"{path} {route.body}" for mark in ("{book}", "{code}", "{coding}")):
        made = await client.post(
            "/api/codebooks", json={"name": "b", "codes": [{"name": "c"}]}, headers=h
        )
        ids["book"], ids["code"] = made.json()["id"], made.json()["codes"][0]["id"]
    if "{coding}" in path:
        made = await client.post(
            f"/api/conversations/{tid}/nodes/1/codings", json={"code_id": ids["code"]}, headers=h
        )
        ids["coding"] = made.json()["id"]
    if "{profile}" in path:
        made = await client.post(
            "/api/profiles", json={"name": "mine", "provider": "offline"}, headers=h
        )
        ids["profile"] = made.json()["id"]
    if "{share}" in path:
        made = await client.post(
            f"/api/conversations/{tid}/shares", json={"role": "viewer"}, headers=h
        )
        ids["share"] = made.json()["id"]
    marks = f"{path} {route.body}"
    if "{study}" in marks or "{join}" in marks:
        made = await client.post(
            "/api/studies", json={"name": "walk", "conditions": [{"name": "a"}]}, headers=h
        )
        ids["study"], ids["join"] = made.json()["id"], made.json()["join_token"]
    if "{member}" in marks:
        member, _ = await new_user(app, "mem")
        ids["member"] = member.name
        if "{member}" in path:
            await client.post(
                f"/api/studies/{ids['study']}/members",
                json={"user": member.name, "role": "viewer"},
                headers=h,
            )
    if "{job}" in path:
        ids["job"] = f"job_{uuid.uuid4().hex[:12]}"
        async with db_of(app).transaction() as s:
            s.add(
                Job(
                    id=ids["job"],
                    user_id=owner.id,
                    root_thread_id=tid,
                    kind="replay",
                    state="done",
                    spec={},
                )
            )
    return tid, ids


def _filled(value: Any, ids: dict[str, Any]) -> Any:
    """A body value with its marks filled in; a value that is one mark (`"{code}"`)
    takes the id itself (a number stays a number)."""
    if not isinstance(value, str):
        return value
    if value.startswith("{") and value.endswith("}") and value[1:-1] in ids:
        return ids[value[1:-1]]
    return value.format(**ids)


@pytest.mark.parametrize(("method", "template"), sorted(ROUTES))
async def test_each_route_asks_the_rule(
    module_app: FastAPI,
    module_client: httpx.AsyncClient,
    monkeypatch: pytest.MonkeyPatch,
    method: str,
    template: str,
) -> None:
    app, client = module_app, module_client  # fresh users and families: none sees another's
    route = ROUTES[(method, template)]
    owner, owner_h = await new_user(app, "walk")
    tid, ids = await _fill(app, client, route, owner, owner_h)
    link = await client.post(
        f"/api/conversations/{tid}/shares", json={"role": "commenter"}, headers=owner_h
    )
    link_h = bearer(link.json()["token"])
    body: dict[str, Any] | None = None
    if route.body is not None:
        body = {k: _filled(v, ids) for k, v in route.body.items()}
    if (method, template) == ("POST", "/api/conversations/import"):
        body = (await client.get(f"/api/conversations/{tid}/export", headers=owner_h)).json()
    path = route.path.format(**ids)

    # A link is refused wherever its line needs more than a link may have.
    if not link_may(route.asks):
        answer = await client.request(method, path, json=body, headers=link_h)
        assert answer.status_code == 403, (method, template, answer.text)

    caller = owner_h
    if (method, template) in STRANGER_ONLY:
        _, caller = await new_user(app, "stranger")
    with recorded(monkeypatch) as asked:
        answer = await client.request(method, path, json=body, headers=caller)
    assert answer.status_code < 500, answer.text
    assert set(asked) == route.asks, (method, template, asked, answer.status_code, answer.text)


async def test_each_ahp_command_asks_the_rule(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, owner_h = await new_user(app, "walk")
    seeded = await seed_conversation(app, owner)
    tid = seeded.thread_id
    chat, session = chat_of(tid), session_of(tid)
    token = owner_h["Authorization"].removeprefix("Bearer ")
    async with live_server(app) as base:
        ahp = await AhpClient.open(base, token=token)
        await ahp.initialize(["1.0.0"])
        await ahp.request("subscribe", {"channel": chat})
        first = await send(ahp, chat, "objective: walk", 1)
        calls: dict[tuple[str, str | None], Callable[[], Any]] = {
            ("listSessions", None): lambda: ahp.request("listSessions", {}),
            ("subscribe", None): lambda: ahp.request("subscribe", {"channel": session}),
            ("unsubscribe", None): lambda: ahp.request("unsubscribe", {"channel": session}),
            ("fetchTurns", None): lambda: ahp.request(
                "fetchTurns", {"channel": chat, "parentTurnId": None}
            ),
            ("checkoutChatHistory", None): lambda: ahp.request(
                "checkoutChatHistory", {"channel": chat, "turnId": first}
            ),
            ("createChat", None): lambda: ahp.request(
                "createChat",
                {
                    "channel": session,
                    "chat": f"ahp-chat:/{uuid.uuid4()}",
                    "source": {"kind": "fork", "chat": chat, "turnId": first},
                },
            ),
            ("createSession", None): lambda: ahp.request(
                "createSession", {"channel": f"ahp-session:/{uuid.uuid4()}"}
            ),
            ("dispatchAction", "chat/turnStarted"): lambda: send(ahp, chat, "objective: again", 2),
            ("dispatchAction", "annotations/set"): lambda: ahp.request(
                "dispatchAction",
                {
                    "channel": f"{session}/annotations",
                    "clientSeq": 3,
                    "action": {
                        "type": "annotations/set",
                        "annotation": {
                            "entries": [{"text": "a note"}],
                            "origin": {"turnId": first},
                        },
                    },
                },
            ),
            ("disposeSession", None): lambda: ahp.request("disposeSession", {"channel": session}),
        }
        assert set(calls) == set(COMMANDS)
        try:
            for key, call in calls.items():
                with recorded(monkeypatch, any_task=True) as asked:
                    await call()
                    await asyncio.sleep(0.05)
                assert set(asked) == COMMANDS[key], (key, asked)
        finally:
            await ahp.close()
