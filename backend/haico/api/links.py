"""OpenAPI links: how the answer of one operation feeds the next (the thread a create,
branch or fork returns is the one to send turns to, branch at its latest turn, fork,
check out or set the objective of; a checkout's working thread is where the
next turn or edit goes).

They document the API's workflow for client generators, and they are what a
stateful fuzzer follows to chain real ids from call to call.
"""

from __future__ import annotations

from typing import Any

THREAD = "/api/conversations/{thread_id}"
Body = dict[str, Any] | None

# A Conversation answer: where its thread id and latest turn are.
_CONVERSATION: dict[tuple[str, str], tuple[str, Body]] = {
    (f"{THREAD}/turns", "post"): ("SendTurn", None),
    (f"{THREAD}/branch", "post"): ("Branch", {"from_turn": "$response.body#/turn_index"}),
    (f"{THREAD}/fork", "post"): ("Fork", {"from_turn": "$response.body#/turn_index"}),
    (f"{THREAD}/checkout", "post"): ("CheckoutBaseline", {"turn_id": None, "force": True}),
    (f"{THREAD}/graph", "get"): ("Graph", None),
    (f"{THREAD}/history", "get"): ("History", None),
    (f"{THREAD}/workspace", "get"): ("Workspace", None),
    (f"{THREAD}/objective", "put"): ("SetObjective", None),
}
# A History answer: the working thread (a draft after a checkout) and the head.
_HISTORY: dict[tuple[str, str], tuple[str, Body]] = {
    (f"{THREAD}/turns", "post"): ("SendTurn", None),
    (f"{THREAD}/checkout", "post"): (
        "CheckoutHead",
        {"turn_id": "$response.body#/head_turn_id", "force": True},
    ),
    (f"{THREAD}/graph", "get"): ("Graph", None),
    (f"{THREAD}/workspace", "get"): ("Workspace", None),
    (f"{THREAD}/objective", "put"): ("SetObjective", None),
}
# (path, method, status) of an answer -> (where its thread id is, what can follow)
_SOURCES: dict[tuple[str, str, str], tuple[str, dict[tuple[str, str], tuple[str, Body]]]] = {
    ("/api/conversations", "post", "201"): ("$response.body#/thread_id", _CONVERSATION),
    ("/api/conversations/import", "post", "201"): ("$response.body#/thread_id", _CONVERSATION),
    (f"{THREAD}/branch", "post", "201"): ("$response.body#/thread_id", _CONVERSATION),
    (f"{THREAD}/fork", "post", "201"): ("$response.body#/thread_id", _CONVERSATION),
    (f"{THREAD}/checkout", "post", "200"): ("$response.body#/working_thread_id", _HISTORY),
    (f"{THREAD}/history", "get", "200"): ("$response.body#/working_thread_id", _HISTORY),
}


def _ref(path: str, method: str) -> str:
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method


def add_links(schema: dict[str, Any]) -> dict[str, Any]:
    """Add the links to an OpenAPI document in place (operations it lacks are skipped)."""
    paths = schema.get("paths", {})
    for (path, method, status), (thread_id, follow_ups) in _SOURCES.items():
        response = paths.get(path, {}).get(method, {}).get("responses", {}).get(status)
        if response is None:
            continue
        links = response.setdefault("links", {})
        for (target, target_method), (name, body) in follow_ups.items():
            if target_method not in paths.get(target, {}):
                continue
            link: dict[str, Any] = {
                "operationRef": _ref(target, target_method),
                "parameters": {"path.thread_id": thread_id},
            }
            if body is not None:
                link["requestBody"] = body
            links[name] = link
    return schema
