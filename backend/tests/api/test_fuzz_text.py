"""Every text field the REST API takes, fuzzed with arbitrary Unicode (lone surrogates
included, sent as JSON escapes, as a browser's `JSON.stringify` sends them): every
answer is a 2xx or a 4xx, never a 5xx, and the families made before are unchanged.

A family made first (objective, document, preference, todo, two steps, a note, a branch)
is read back whole (`GET …/export`) after every example; the fuzzed writes go to a
second family (and the families an example creates, each read back at the end as it was
answered). A 5xx (or a connection dropped before the answer) is collected with its
field, not raised, so one run lists every field that fails, telling apart the texts that
hold a lone surrogate. CI draws HAICO_FUZZ_TEXT_EXAMPLES (default 100) examples per
database; `make test-long` 600.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx
from hypothesis import HealthCheck, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from haico.config import Settings
from tests.api.test_openapi_contract import threaded_server

EXAMPLES = int(os.environ.get("HAICO_FUZZ_TEXT_EXAMPLES", "100"))

# Any code point, lone surrogates (category Cs) as likely as the rest, and some texts
# that are only surrogates or end in one.
CHAR = st.one_of(st.characters(), st.characters(categories=["Cs"]))
TEXT = st.one_of(
    st.text(CHAR, max_size=40),
    st.builds(
        lambda a, s, b: a + s + b,
        st.text(max_size=8),
        st.sampled_from(["\ud800", "\udfff", "\udc00\ud800", "\ud83d"]),
        st.text(max_size=8),
    ),
)


def has_surrogate(text: str) -> bool:
    return any("\ud800" <= ch <= "\udfff" for ch in text)


def _json(body: Any) -> bytes:
    # Escaped as \uXXXX: a lone surrogate is valid JSON text, though not UTF-8.
    return json.dumps(body, ensure_ascii=True).encode()


@dataclass(frozen=True)
class Ids:
    """The second family, the target of the fuzzed writes."""

    tid: str
    pref: int
    todo: int
    note: str
    profile: str


@dataclass(frozen=True)
class Field:
    label: str
    method: str
    path: Callable[[Ids], str]
    body: Callable[[str, Ids], Any]


T = "/api/conversations/{}"
FIELDS = [
    Field("create title", "POST", lambda i: "/api/conversations", lambda t, i: {"title": t}),
    Field(
        "create objective", "POST", lambda i: "/api/conversations", lambda t, i: {"objective": t}
    ),
    Field("rename", "PATCH", lambda i: T.format(i.tid), lambda t, i: {"title": t}),
    Field("branch name", "PATCH", lambda i: T.format(i.tid), lambda t, i: {"name": t}),
    Field("objective", "PUT", lambda i: T.format(i.tid) + "/objective", lambda t, i: {"text": t}),
    Field(
        "document content",
        "PUT",
        lambda i: T.format(i.tid) + "/document",
        lambda t, i: {"title": "d", "content": t},
    ),
    Field(
        "document title",
        "PUT",
        lambda i: T.format(i.tid) + "/document",
        lambda t, i: {"title": t, "content": "c"},
    ),
    Field(
        "preference", "POST", lambda i: T.format(i.tid) + "/preferences", lambda t, i: {"text": t}
    ),
    Field(
        "preference edit",
        "PATCH",
        lambda i: T.format(i.tid) + f"/preferences/{i.pref}",
        lambda t, i: {"text": t},
    ),
    Field("todo", "POST", lambda i: T.format(i.tid) + "/todos", lambda t, i: {"text": t}),
    Field(
        "todo edit",
        "PATCH",
        lambda i: T.format(i.tid) + f"/todos/{i.todo}",
        lambda t, i: {"text": t},
    ),
    Field("turn", "POST", lambda i: T.format(i.tid) + "/turns", lambda t, i: {"content": t}),
    Field(
        "branch reason",
        "POST",
        lambda i: T.format(i.tid) + "/branch",
        lambda t, i: {"from_turn": 1, "reason": t},
    ),
    Field(
        "branch workspace",
        "POST",
        lambda i: T.format(i.tid) + "/branch",
        lambda t, i: {
            "from_turn": 1,
            "workspace": {
                "objective": t,
                "document": {"title": t, "content": t},
                "preferences": [{"text": t}],
                "todos": [{"text": t}],
            },
        },
    ),
    Field(
        "note",
        "POST",
        lambda i: T.format(i.tid) + "/nodes/1/notes",
        lambda t, i: {"text": t, "codes": [t]},
    ),
    Field("note edit", "PATCH", lambda i: f"/api/notes/{i.note}", lambda t, i: {"text": t}),
    Field(
        "merge label",
        "POST",
        lambda i: T.format(i.tid) + "/merge",
        lambda t, i: {"source": f"{i.tid}:1", "label": t},
    ),
    Field(
        "checkout id", "POST", lambda i: T.format(i.tid) + "/checkout", lambda t, i: {"turn_id": t}
    ),
    Field(
        "chosen path",
        "PUT",
        lambda i: T.format(i.tid) + "/chosen-path",
        lambda t, i: {"node_id": t},
    ),
    Field(
        "profile",
        "POST",
        lambda i: "/api/profiles",
        lambda t, i: {"name": t, "model": t, "instructions": t},
    ),
    Field(
        "profile edit",
        "PATCH",
        lambda i: f"/api/profiles/{i.profile}",
        lambda t, i: {"instructions": t, "name": t},
    ),
    Field("share user", "POST", lambda i: T.format(i.tid) + "/shares", lambda t, i: {"user": t}),
]


def ok(r: httpx.Response) -> Any:
    assert r.status_code < 300, (r.request.url, r.status_code, r.text)
    return r.json() if r.headers.get("content-type", "").startswith("application/json") else None


def family(c: httpx.Client, title: str) -> tuple[str, dict[str, Any]]:
    """A family with something in every part; its id and the ids of its items."""
    tid = ok(c.post("/api/conversations", json={"title": title, "objective": "o"}))["thread_id"]
    ok(c.put(f"{T.format(tid)}/document", json={"title": "doc", "content": "text"}))
    pref = ok(c.post(f"{T.format(tid)}/preferences", json={"text": "p"}))["id"]
    todo = ok(c.post(f"{T.format(tid)}/todos", json={"text": "t"}))["id"]
    for content in ("first", "second"):
        with c.stream("POST", f"{T.format(tid)}/turns", json={"content": content}) as r:
            assert r.status_code == 200
            r.read()
    note = ok(c.post(f"{T.format(tid)}/nodes/1/notes", json={"text": "n"}))["id"]
    ok(c.post(f"{T.format(tid)}/branch", json={"from_turn": 1, "reason": "why"}))
    return tid, {"pref": pref, "todo": todo, "note": note}


def exported(c: httpx.Client, tid: str) -> dict[str, Any]:
    """A family as its export holds it, less the moment of the export."""
    body = ok(c.get(f"{T.format(tid)}/export"))
    assert isinstance(body, dict)
    body.pop("exported_at", None)
    return body


def send(c: httpx.Client, method: str, path: str, body: Any) -> int | httpx.Response:
    """The answer to a fuzzed request, or 599 when the connection dropped before one
    came whole (a server failure, as a 5xx is). Each request has a connection of its
    own, so a dropped one cannot fail the next request."""
    headers = {"Content-Type": "application/json", "Connection": "close"}
    try:
        with c.stream(method, path, content=_json(body), headers=headers) as r:
            r.read()
    except httpx.TransportError:
        return DROPPED
    return r


DROPPED = 599


def test_text_fields_take_any_unicode_without_a_server_error(settings: Settings) -> None:
    server_errors: dict[str, set[str]] = {}
    answered: dict[str, set[int]] = {}
    created: dict[str, dict[str, Any]] = {}
    with threaded_server(settings) as base, httpx.Client(base_url=base, timeout=60) as c:
        earlier, _ = family(c, "earlier")
        before = exported(c, earlier)
        target, items = family(c, "target")
        profile = ok(
            c.post(
                "/api/profiles", json={"name": "fuzz", "provider": "offline", "model": "offline"}
            )
        )["id"]
        ids = Ids(target, items["pref"], items["todo"], items["note"], profile)

        @hypothesis_settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(field=st.sampled_from(FIELDS), text=TEXT)
        def probe(field: Field, text: str) -> None:
            r = send(c, field.method, field.path(ids), field.body(text, ids))
            status = r if isinstance(r, int) else r.status_code
            answered.setdefault(field.label, set()).add(status)
            if status >= 500:
                kind = "lone surrogate" if has_surrogate(text) else "valid text"
                server_errors.setdefault(f"{field.label} ({kind})", set()).add(ascii(text)[:40])
            elif field.label.startswith("create") and not isinstance(r, int) and status == 201:
                tid = r.json()["thread_id"]
                created[tid] = exported(c, tid)
            assert exported(c, earlier) == before, field.label

        probe()
        for tid, was in created.items():
            assert exported(c, tid) == was, tid
    print("\n[text fuzz]", {k: sorted(v) for k, v in sorted(answered.items())})
    assert not server_errors, "\n".join(
        f"{k}: {sorted(v)}" for k, v in sorted(server_errors.items())
    )
    assert all(code < 500 for codes in answered.values() for code in codes)
