"""Every thread endpoint × every role: what a share lets its holder do.

The endpoints are the auth matrix's (`test_auth_matrix.ENDPOINTS`, itself checked
against the OpenAPI document); each write names the role it needs here, and a test
checks that every write the OpenAPI document lists is named. A role at or above the
need gets the owner's answer; below it, 403 with nothing of the thread in the body.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.access.test_auth_matrix import ENDPOINTS, _all_routes, _no_data, _path, _template
from tests.history_helpers import live_server
from tests.share_helpers import Family, grantee, new_family, new_user, share

RANK = {"viewer": 1, "commenter": 2, "editor": 3, "owner": 4}
# What each write needs; every GET needs `viewer`.
NEED: dict[tuple[str, str], str] = {
    ("PATCH", "/api/conversations/{tid}"): "editor",  # names, titles, archive
    ("DELETE", "/api/conversations/{tid}"): "owner",
    ("PUT", "/api/conversations/{tid}/objective"): "editor",
    ("PUT", "/api/conversations/{tid}/document"): "editor",
    ("POST", "/api/conversations/{tid}/preferences"): "editor",
    ("PATCH", "/api/conversations/{tid}/preferences/{pref}"): "editor",
    ("DELETE", "/api/conversations/{tid}/preferences/{pref}"): "editor",
    ("POST", "/api/conversations/{tid}/todos"): "editor",
    ("PATCH", "/api/conversations/{tid}/todos/{todo}"): "editor",
    ("DELETE", "/api/conversations/{tid}/todos/{todo}"): "editor",
    ("POST", "/api/conversations/{tid}/turns"): "editor",
    ("POST", "/api/conversations/{tid}/turns/cancel"): "editor",
    ("POST", "/api/conversations/{tid}/branch"): "editor",
    # A fork is a copy the caller owns: reading is enough (a link owns nothing).
    ("POST", "/api/conversations/{tid}/fork"): "viewer",
    ("POST", "/api/conversations/{tid}/checkout"): "editor",
    ("POST", "/api/conversations/{tid}/nodes/1/notes"): "commenter",
    ("POST", "/api/conversations/{tid}/merge"): "editor",
    # Undoing a bring-in is a step like any other.
    ("POST", "/api/conversations/{tid}/merge/1/revert"): "editor",
    # Coding and judging are a coder's: a commenter's share codes, a viewer's reads.
    ("POST", "/api/conversations/{tid}/nodes/1/codings"): "commenter",
    ("POST", "/api/conversations/{tid}/judgments"): "commenter",
    # Agreement compares every coder's codings: while they are blind (a new family's
    # are), only the owner reads it.
    ("GET", "/api/conversations/{tid}/agreement"): "owner",
    # A replay sends turns in the family (its profile is the caller's own).
    ("POST", "/api/conversations/{tid}/replay"): "editor",
    # The path a user last chose is that user's own memory, not the family's.
    ("PUT", "/api/conversations/{tid}/chosen-path"): "viewer",
    ("POST", "/api/conversations/{tid}/shares"): "owner",
    ("GET", "/api/conversations/{tid}/shares"): "owner",
}
ROLES = ["viewer", "commenter", "editor", "link-viewer", "link-commenter"]


def _need(method: str, template: str) -> str:
    return NEED.get((method, template.split("?")[0]), "viewer" if method == "GET" else "?")


def _expected(role: str, method: str, template: str, ok: int) -> int:
    if role.startswith("link-") and template.endswith("/fork"):
        return 403
    held = RANK[role.removeprefix("link-")]
    return ok if held >= RANK[_need(method, template)] else 403


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_every_write_names_its_need(app: FastAPI) -> None:
    routes = {(m, _template(p)) for m, p in _all_routes(app) if "{thread_id}" in p}
    writes = {r for r in routes if r[0] != "GET"}
    assert len(writes) > 15
    assert not writes - set(NEED), f"name the role these need: {sorted(writes - set(NEED))}"
    for method, template, _, _ in ENDPOINTS:
        assert _need(method, template) in RANK, (method, template)


def _case_id(endpoint: tuple[str, str, dict[str, Any] | None, int], role: str) -> str:
    """`METHOD-template-role`, with the body's fields where one route is listed with
    several bodies (a PATCH of a title, of `archived`, of a profile)."""
    method, template, body, _ = endpoint
    twins = [e for e in ENDPOINTS if e[:2] == (method, template)]
    fields = f"-{'+'.join(body or {})}" if len(twins) > 1 else ""
    return f"{method}-{template}{fields}-{role}"


CASES = [pytest.param(*e, role, id=_case_id(e, role)) for e in ENDPOINTS for role in ROLES]


@dataclass
class Shared:
    """A family with a grantee for every role, made once per module and backend."""

    fam: Family
    headers: dict[str, dict[str, str]]


async def _shared(app: FastAPI, client: httpx.AsyncClient) -> Shared:
    fam = await new_family(app)
    return Shared(fam, {role: await grantee(app, client, fam, role) for role in ROLES})


@pytest.fixture(scope="module")
def module_settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


@pytest.fixture(scope="module")
async def read_family(module_app: FastAPI, module_client: httpx.AsyncClient) -> Shared:
    """What every read (a GET changes nothing) is asked of."""
    return await _shared(module_app, module_client)


@pytest.fixture(scope="module")
async def refused_family(module_app: FastAPI, module_client: httpx.AsyncClient) -> Shared:
    """What every write a role is refused is asked of: a refusal changes nothing (a
    write let through by mistake fails its own case, whatever it did to the family)."""
    return await _shared(module_app, module_client)


@pytest.mark.parametrize(("method", "template", "body", "ok", "role"), CASES)
async def test_role_matrix(
    module_app: FastAPI,
    module_client: httpx.AsyncClient,
    read_family: Shared,
    refused_family: Shared,
    method: str,
    template: str,
    body: dict[str, Any] | None,
    ok: int,
    role: str,
) -> None:
    want = _expected(role, method, template, ok)
    if method == "GET":
        fam, headers = read_family.fam, read_family.headers[role]
    elif want == 403:
        fam, headers = refused_family.fam, refused_family.headers[role]
    else:  # a write that goes through: a family of its own, as it changes it
        fam = await new_family(module_app)
        headers = await grantee(module_app, module_client, fam, role)
    path = _path(template, fam.seeded)
    r = await module_client.request(method, path, json=body, headers=headers)
    assert r.status_code == want, (method, template, role, r.status_code, r.text)
    if want == 403:
        _no_data(r)


async def test_event_stream_for_every_role(app: FastAPI, client: httpx.AsyncClient) -> None:
    """`…/events` (SSE) opens for every role, the header and `?share=` forms alike; a
    stranger is 403 and a revoked share 401 before any event."""
    fam = await new_family(app)
    path = f"/api/conversations/{fam.tid}/events"
    async with live_server(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as c:
        for role in ROLES:
            headers = await grantee(app, client, fam, role)
            forms: list[dict[str, Any]] = [{"headers": headers}]
            if role.startswith("link-"):
                forms.append({"params": {"share": headers["Authorization"][7:]}})
            for form in forms:
                async with c.stream("GET", path, **form) as r:
                    assert r.status_code == 200, (role, form)
                    assert r.headers["content-type"].startswith("text/event-stream")
        _, stranger_h = await new_user(app, "str")
        assert (await c.get(path, headers=stranger_h)).status_code == 403
        made = await share(client, fam, "viewer")
        await client.delete(f"/api/shares/{made['id']}", headers=fam.owner_h)
        r = await c.get(path, params={"share": made["token"]})
        assert r.status_code == 401
