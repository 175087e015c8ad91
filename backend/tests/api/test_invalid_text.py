"""Text that is not valid Unicode (a lone surrogate, which JSON can carry and no
column or UTF-8 answer can hold) is a 422 on every REST write, on both databases,
with nothing written; and no 422 body echoes what it rejected."""

from __future__ import annotations

import json

import httpx

from tests.history_helpers import new_thread, turn_ok

API = "/api/conversations"
LONE = "\ud800 zq-marker"


async def _send(client: httpx.AsyncClient, method: str, url: str, body: object) -> httpx.Response:
    # json.dumps writes the surrogate as the escape `\ud800`, as a hostile client would.
    content = json.dumps(body).encode()
    return await client.request(
        method, url, content=content, headers={"content-type": "application/json"}
    )


async def test_a_lone_surrogate_in_any_text_field_is_a_422(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client, "kept")
    await turn_ok(client, tid, "objective: keep; todo: one")
    before = {
        part: (await client.get(f"{API}/{tid}/{part}")).json()
        for part in ("document", "workspace", "history")
    }
    writes = [
        ("PUT", f"{API}/{tid}/document", {"content": LONE}),
        ("PUT", f"{API}/{tid}/document", {"title": LONE, "content": "x"}),
        ("POST", f"{API}/{tid}/todos", {"text": LONE}),
        ("POST", f"{API}/{tid}/preferences", {"text": LONE}),
        ("PUT", f"{API}/{tid}/objective", {"objective": LONE}),
        ("POST", f"{API}/{tid}/turns", {"content": LONE}),
        ("PATCH", f"{API}/{tid}", {"title": LONE}),
        ("POST", API, {"title": LONE}),
        ("POST", f"{API}/{tid}/nodes/1/notes", {"text": "n", "codes": [LONE]}),
        # a surrogate written as its UTF-8 bytes (which no valid UTF-8 holds)
        ("RAW", f"{API}/{tid}/todos", b'{"text": "\xed\xa0\x80 zq-marker"}'),
    ]
    for method, url, body in writes:
        if method == "RAW":
            assert isinstance(body, bytes)
            r = await client.post(url, content=body, headers={"content-type": "application/json"})
        else:
            r = await _send(client, method, url, body)
        assert r.status_code == 422, (method, url, r.status_code, r.text)
        assert r.json()["code"] == "invalid_input"
        assert "zq-marker" not in r.text and "\\ud800" not in r.text.lower()
    after = {
        part: (await client.get(f"{API}/{tid}/{part}")).json()
        for part in ("document", "workspace", "history")
    }
    assert after == before
    titles = [c["title"] for c in (await client.get(API)).json()]
    assert titles == ["kept"]
    # A valid pair (an emoji written as two escapes) is text like any other.
    r = await _send(client, "POST", f"{API}/{tid}/todos", {"text": "\U0001f600 ok"})
    assert r.status_code == 201 and r.json()["text"] == "\U0001f600 ok"


async def test_a_422_never_echoes_the_rejected_input(client: httpx.AsyncClient) -> None:
    tid = await new_thread(client)
    secret = "hk_" + "s" * 40
    for method, url, body in (
        ("PUT", f"{API}/{tid}/document", {"content": 12, "title": secret * 20}),
        ("POST", f"{API}/{tid}/todos", {"text": secret, "depth": secret}),
        ("POST", f"{API}/{tid}/turns", {"content": secret, "extra": secret}),
    ):
        r = await _send(client, method, url, body)
        assert r.status_code == 422, r.text
        assert secret not in r.text and "input" not in {k for d in r.json()["detail"] for k in d}
