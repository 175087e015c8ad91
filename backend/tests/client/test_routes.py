"""The client's routes against the server's OpenAPI document: every path it calls exists
with that method, answers with the status the client expects, and takes and answers the
same models the client sends and reads. A route renamed, a body or an answer changed on
the server fails here."""

from __future__ import annotations

from typing import Any

import pytest

from haico.client import routes
from haico.client.routes import Route
from haico.main import create_app

OPENAPI: dict[str, Any] = create_app().openapi()


def _refs(schema: dict[str, Any] | None) -> set[str]:
    """The component names a schema stands for (itself, a list's items, any of a union)."""
    if not schema:
        return set()
    if "$ref" in schema:
        return {schema["$ref"].rsplit("/", 1)[1]}
    found: set[str] = set()
    for key in ("anyOf", "oneOf"):
        for part in schema.get(key, []):
            found |= _refs(part)
    return found


def _operation(route: Route) -> dict[str, Any]:
    assert route.path in OPENAPI["paths"], f"{route.path} is not a path of the API"
    operations = OPENAPI["paths"][route.path]
    assert route.method.lower() in operations, f"{route.path} has no {route.method}"
    return operations[route.method.lower()]


@pytest.mark.parametrize("route", routes.ALL, ids=lambda r: f"{r.method} {r.path} {r.status}")
def test_every_route_the_client_calls_is_in_the_openapi_document(route: Route) -> None:
    operation = _operation(route)
    answer = operation["responses"].get(str(route.status))
    assert answer is not None, f"{route.method} {route.path} never answers {route.status}"
    content = answer.get("content", {})
    if route.body == "empty":
        assert not content
    elif route.body == "sse":
        assert "text/event-stream" in content
    elif route.body == "text":
        assert content and "application/json" not in content
    else:
        assert route.answer is not None
        schema = content["application/json"]["schema"]
        if route.many:
            assert schema["type"] == "array"
            schema = schema["items"]
        assert route.answer.__name__ in _refs(schema)
    body = operation.get("requestBody", {}).get("content", {}).get("application/json")
    if route.request is None:
        assert body is None, f"{route.method} {route.path} takes a body the client never sends"
    else:
        assert body is not None
        assert _refs(body["schema"]) == {route.request.__name__}


def test_the_checks_above_notice_a_route_that_drifted() -> None:
    """The test fails on drift, not only passes: a moved path and a changed answer."""
    moved = Route("GET", "/api/conversation/{thread_id}", 200, answer=routes.GET.answer)
    with pytest.raises(AssertionError, match="is not a path"):
        test_every_route_the_client_calls_is_in_the_openapi_document(moved)
    other_answer = Route("GET", routes.GET.path, 200, answer=routes.HISTORY.answer)
    with pytest.raises(AssertionError):
        test_every_route_the_client_calls_is_in_the_openapi_document(other_answer)
    wrong_method = Route("PUT", routes.GET.path, 200, answer=routes.GET.answer)
    with pytest.raises(AssertionError, match="has no PUT"):
        test_every_route_the_client_calls_is_in_the_openapi_document(wrong_method)


def test_the_route_list_holds_every_route_of_the_module() -> None:
    declared = [v for v in vars(routes).values() if isinstance(v, Route)]
    assert len(routes.ALL) == len(declared) > 30
