"""`HaicoError` from what a server answers: HAICO's error body, and anything else."""

from __future__ import annotations

import httpx

from haico.client import HaicoError


def test_the_error_body_gives_code_message_status_and_data() -> None:
    body = {"code": "merge_conflict", "message": "2 conflicts", "data": {"plan": {"x": 1}}}
    error = HaicoError.from_response(httpx.Response(409, json=body))
    assert (error.code, error.message, error.status) == ("merge_conflict", "2 conflicts", 409)
    assert error.data == {"plan": {"x": 1}}
    assert str(error) == "409 merge_conflict: 2 conflicts"


def test_a_body_that_is_not_haicos_names_the_status() -> None:
    error = HaicoError.from_response(httpx.Response(502, text="<h1>Bad gateway</h1>"))
    assert (error.code, error.status) == ("http_502", 502)
    assert error.message == "<h1>Bad gateway</h1>"
    empty = HaicoError.from_response(httpx.Response(503))
    assert (empty.code, empty.message) == ("http_503", "Service Unavailable")
