"""Without token auth there are no studies: every study route answers 400
`studies_need_token_auth` (the local user would otherwise own every family)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "none"}


async def test_without_token_auth_studies_answer_400(client: httpx.AsyncClient) -> None:
    for method, path, body in (
        ("POST", "/api/studies", {"name": "S", "conditions": [{"name": "a"}]}),
        ("GET", "/api/studies", None),
        ("GET", "/api/studies/sy_x", None),
        ("PATCH", "/api/studies/sy_x", {"name": "x"}),
        ("POST", "/api/studies/sy_x/members", {"user": "u", "role": "coder"}),
        ("GET", "/api/studies/sy_x/members", None),
        ("DELETE", "/api/studies/sy_x/members/u", None),
        ("POST", "/api/studies/join", {"token": "st_x"}),
        ("GET", "/api/studies/participants/me", None),
        ("POST", "/api/studies/participants/me/consent", None),
        ("POST", "/api/studies/participants/me/finish", None),
    ):
        r = await client.request(method, path, json=body)
        assert r.status_code == 400, (method, path, r.text)
        assert r.json()["code"] == "studies_need_token_auth"
    assert (await client.get("/api/conversations")).status_code == 200
