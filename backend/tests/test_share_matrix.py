"""Every thread endpoint × every role: what a share lets its holder do.

The endpoints are the auth matrix's (`test_auth_matrix.ENDPOINTS`, itself checked
against the OpenAPI document); each write names the role it needs here, and a test
checks that every write the OpenAPI document lists is named. A role at or above the
need gets the owner's answer; below it, 403 with nothing of the thread in the body.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.history_helpers import live_server
from tests.share_helpers import grantee, new_family, new_user, share
from tests.test_auth_matrix import ENDPOINTS, _all_routes, _no_data, _path, _template

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


@pytest.mark.parametrize(("method", "template", "body", "ok"), ENDPOINTS)
async def test_role_matrix(
    app: FastAPI,
    client: httpx.AsyncClient,
    method: str,
    template: str,
    body: dict[str, Any] | None,
    ok: int,
) -> None:
    for role in ROLES:
        fam = await new_family(app)  # fresh: a write by one role does not change the next
        headers = await grantee(app, client, fam, role)
        r = await client.request(method, _path(template, fam.seeded), json=body, headers=headers)
        want = _expected(role, method, template, ok)
        assert r.status_code == want, (role, r.status_code, r.text)
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
