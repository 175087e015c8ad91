"""Sharing a family through the public API: links and named shares, who manages them,
revocation and expiry, the shared list, a viewer's fork, notes by a commenter."""

from __future__ import annotations

import asyncio
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.models import ActionLogEntry, Share
from haico.services.history import event_stream
from tests.helpers import db_of
from tests.history_helpers import live_server
from tests.share_helpers import (
    bearer,
    expire,
    grantee,
    new_family,
    new_user,
    share,
    soon,
    turn,
)
from tests.sse_client import parse_sse


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def test_link_shown_once_stored_hashed(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    made = await share(client, fam, "viewer")
    assert made["token"].startswith("sh_") and made["user"] is None
    assert made["role"] == "viewer" and made["revoked"] is False
    listed = (await client.get(f"/api/conversations/{fam.tid}/shares", headers=fam.owner_h)).json()
    assert [s["id"] for s in listed] == [made["id"]]
    assert listed[0]["token"] is None
    async with db_of(app).read() as s:
        stored = (await s.execute(select(Share.token_hash))).scalars().all()
    assert made["token"] not in stored and all(len(h) == 64 for h in stored if h)


async def test_header_and_query_forms(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    token = (await share(client, fam, "viewer"))["token"]
    path = f"/api/conversations/{fam.tid}"
    r = await client.get(path, headers=bearer(token))
    assert r.status_code == 200 and r.json()["title"] == "seed"
    r = await client.get(path, params={"share": token})
    assert r.status_code == 200 and r.json()["thread_id"] == fam.tid
    # `?share=` carries a link's token, never an API token.
    r = await client.get(path, params={"share": fam.owner_h["Authorization"][7:]})
    assert r.status_code == 401
    # `?share=` is for GET (and SSE) only.
    r = await client.put(f"{path}/objective", params={"share": token}, json={"text": "x"})
    assert r.status_code == 401
    # A link opens its family and nothing else.
    other = await new_family(app)
    r = await client.get(f"/api/conversations/{other.tid}", headers=bearer(token))
    assert r.status_code == 403
    for method, url in (("POST", "/api/conversations"), ("GET", "/api/codes")):
        r = await client.request(method, url, json={"title": "t"}, headers=bearer(token))
        assert r.status_code == 403, (method, url, r.text)
    # Nor a conversation created by its first send (a link owns nothing).
    fresh = f"th_{uuid.uuid4().hex}"
    commenter = (await share(client, fam, "commenter"))["token"]
    r = await client.post(
        f"/api/conversations/{fresh}/turns",
        params={"create": "true"},
        json={"content": "hello"},
        headers=bearer(commenter),
    )
    assert r.status_code == 403, r.text
    r = await client.get(f"/api/conversations/{fresh}", headers=fam.owner_h)
    assert r.status_code == 404


async def test_link_is_never_editor(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    r = await client.post(
        f"/api/conversations/{fam.tid}/shares", json={"role": "editor"}, headers=fam.owner_h
    )
    assert r.status_code == 422 and r.json()["code"] == "invalid_input"
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    r = await client.post(
        f"/api/conversations/{fam.tid}/shares",
        json={"role": "viewer", "expires_at": past},
        headers=fam.owner_h,
    )
    assert r.status_code == 422
    r = await client.post(
        f"/api/conversations/{fam.tid}/shares",
        json={"role": "viewer", "user": "nobody-" + uuid.uuid4().hex},
        headers=fam.owner_h,
    )
    assert r.status_code == 404


async def test_only_the_owner_manages_shares(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    editor_h = await grantee(app, client, fam, "editor")
    _, stranger_h = await new_user(app, "str")
    made = await share(client, fam, "commenter")
    url = f"/api/conversations/{fam.tid}/shares"
    for headers in (editor_h, stranger_h, bearer(made["token"])):
        assert (await client.post(url, json={"role": "viewer"}, headers=headers)).status_code == 403
        assert (await client.get(url, headers=headers)).status_code == 403
        r = await client.delete(f"/api/shares/{made['id']}", headers=headers)
        # A stranger cannot read the family: as no share at all (`test_others_ids.py`).
        assert r.status_code == (404 if headers is stranger_h else 403)
    assert (await client.delete("/api/shares/999999999", headers=fam.owner_h)).status_code == 404
    # Never delete the family either.
    r = await client.delete(f"/api/conversations/{fam.tid}", headers=editor_h)
    assert r.status_code == 403


async def test_revoke_and_expiry_next_request(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    link = await share(client, fam, "viewer")
    user, user_h = await new_user(app, "rv")
    named = await share(client, fam, "viewer", user=user.name)
    path = f"/api/conversations/{fam.tid}/graph"
    assert (await client.get(path, headers=bearer(link["token"]))).status_code == 200
    assert (await client.get(path, headers=user_h)).status_code == 200
    for made in (link, named):
        r = await client.delete(f"/api/shares/{made['id']}", headers=fam.owner_h)
        assert r.status_code == 204
    r = await client.get(path, headers=bearer(link["token"]))
    assert r.status_code == 401 and r.json()["code"] == "unauthorized"
    assert (await client.get(path, headers=user_h)).status_code == 401
    listed = (await client.get(f"/api/conversations/{fam.tid}/shares", headers=fam.owner_h)).json()
    assert all(s["revoked"] for s in listed)
    # Expiry: a live link whose time has passed.
    late = await share(client, fam, "viewer", expires_at=soon())
    assert (await client.get(path, headers=bearer(late["token"]))).status_code == 200
    await expire(app, late["id"])
    assert (await client.get(path, headers=bearer(late["token"]))).status_code == 401


async def test_named_expiry_on_the_next_request(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A named share's expiry: its next request is 401 (a read, and a send that then
    changes nothing); another share of the family is untouched."""
    fam = await new_family(app)
    editor, editor_h = await new_user(app, "xe")
    made = await share(client, fam, "editor", user=editor.name, expires_at=soon())
    assert made["expires_at"] is not None and made["user"] == editor.name
    other, other_h = await new_user(app, "xo")
    await share(client, fam, "viewer", user=other.name, expires_at=soon())
    graph = f"/api/conversations/{fam.tid}/graph"
    assert (await client.get(graph, headers=editor_h)).status_code == 200
    assert await turn(client, fam.tid, "todo: before", editor_h) == 200
    await expire(app, made["id"])
    r = await client.get(graph, headers=editor_h)
    assert r.status_code == 401 and r.json()["code"] == "unauthorized", r.text
    assert await turn(client, fam.tid, "todo: after", editor_h) == 401
    r = await client.get("/api/conversations", params={"shared": "true"}, headers=editor_h)
    assert r.status_code == 200 and r.json() == []
    assert (await client.get(graph, headers=other_h)).status_code == 200
    nodes = (await client.get(graph, headers=fam.owner_h)).json()["nodes"]
    assert [n["user_message"] for n in nodes] == ["todo: before"]


@pytest.mark.parametrize("who", ["link", "named"])
@pytest.mark.parametrize("end", ["revoke", "expire"])
async def test_open_stream_closes(
    app: FastAPI, monkeypatch: pytest.MonkeyPatch, end: str, who: str
) -> None:
    """A grantee's open event stream (a link's, a named user's) ends within seconds of
    revocation or expiry, with an `error` event saying why. The stream asks again every
    `RECHECK_SECONDS` (two, at most five: checked here); the test asks it to every 0.2 s
    rather than wait for the server's period."""
    assert 0 < event_stream.RECHECK_SECONDS <= 5
    monkeypatch.setattr(event_stream, "RECHECK_SECONDS", 0.2)
    async with live_server(app) as base, httpx.AsyncClient(base_url=base, timeout=20) as c:
        fam = await new_family(app)
        if who == "link":
            made = await share(c, fam, "viewer", expires_at=soon())
            params, headers = {"share": made["token"]}, {}
        else:
            user, headers = await new_user(app, "ns")
            made = await share(c, fam, "viewer", user=user.name, expires_at=soon())
            params = {}
        path = f"/api/conversations/{fam.tid}/events"
        async with c.stream("GET", path, params=params, headers=headers) as r:
            assert r.status_code == 200
            started = asyncio.get_running_loop().time()
            if end == "revoke":
                gone = await c.delete(f"/api/shares/{made['id']}", headers=fam.owner_h)
                assert gone.status_code == 204
            else:
                await expire(app, made["id"])
            body = ""
            async for chunk in r.aiter_text():
                body += chunk
            took = asyncio.get_running_loop().time() - started
        again = await c.get(path, params=params, headers=headers)
    errors = [d for name, d in parse_sse(body) if name == "error"]
    assert errors and errors[0]["code"] == "unauthorized", body
    assert took < 6, took
    assert again.status_code == 401


async def test_shared_list_with_role(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    user, user_h = await new_user(app, "sl")
    await share(client, fam, "viewer", user=user.name)
    await share(client, fam, "commenter", user=user.name)
    mine = (await client.post("/api/conversations", json={"title": "own"}, headers=user_h)).json()
    plain = (await client.get("/api/conversations", headers=user_h)).json()
    assert [c["thread_id"] for c in plain] == [mine["thread_id"]]
    shared = (await client.get("/api/conversations?shared=true", headers=user_h)).json()
    assert [(c["thread_id"], c["role"]) for c in shared] == [(fam.tid, "commenter")]
    assert shared[0]["owner"] == fam.owner.name
    assert (await client.get("/api/conversations?shared=true", headers=fam.owner_h)).json() == []


async def test_viewer_fork_is_theirs(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    assert await turn(client, fam.tid, "objective: shared work", fam.owner_h) == 200
    viewer_h = await grantee(app, client, fam, "viewer")
    r = await client.post(
        f"/api/conversations/{fam.tid}/fork", json={"from_turn": 1}, headers=viewer_h
    )
    assert r.status_code == 201, r.text
    copy = r.json()["thread_id"]
    # The copy is the viewer's: it edits it; the owner cannot even read it.
    r = await client.put(
        f"/api/conversations/{copy}/objective", json={"text": "mine now"}, headers=viewer_h
    )
    assert r.status_code == 200
    assert (await client.get(f"/api/conversations/{copy}", headers=fam.owner_h)).status_code == 403
    # ... and the shared family is untouched.
    ws = (await client.get(f"/api/conversations/{fam.tid}/workspace", headers=viewer_h)).json()
    assert ws["objective"] == "shared work"
    # A link owns nothing, so it cannot fork.
    link = await share(client, fam, "viewer")
    r = await client.post(
        f"/api/conversations/{fam.tid}/fork", json={"from_turn": 1}, headers=bearer(link["token"])
    )
    assert r.status_code == 403


async def test_a_viewers_copy_outlives_the_share(app: FastAPI, client: httpx.AsyncClient) -> None:
    """The copy's steps below its fork point come from the shared family; once the share
    ends the copy still reads them (they are the copy's history), but a note on one of
    them (a write into the shared family) needs the share."""
    fam = await new_family(app)
    assert await turn(client, fam.tid, "objective: shared work", fam.owner_h) == 200
    user, viewer_h = await new_user(app, "vie")
    made = await share(client, fam, "commenter", user=user.name)
    r = await client.post(
        f"/api/conversations/{fam.tid}/fork", json={"from_turn": 1}, headers=viewer_h
    )
    assert r.status_code == 201, r.text
    copy = r.json()["thread_id"]
    assert (
        await client.delete(f"/api/shares/{made['id']}", headers=fam.owner_h)
    ).status_code == 204
    r = await client.get(f"/api/conversations/{copy}/nodes/1", headers=viewer_h)
    assert r.status_code == 200, r.text
    assert r.json()["user_message"] == "objective: shared work"
    r = await client.post(
        f"/api/conversations/{copy}/nodes/1/notes", json={"text": "mine"}, headers=viewer_h
    )
    assert r.status_code in (401, 403), r.text
    # the shared family itself is closed to the former viewer
    assert (await client.get(f"/api/conversations/{fam.tid}", headers=viewer_h)).status_code == 401


async def test_a_viewers_fork_draws_like_the_owners(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A fork's trajectory draws its own steps only, the ones up to the fork point
    being the source family's (its chat still shows them): the same for a viewer's
    copy as for the owner's own fork."""
    fam = await new_family(app)
    assert await turn(client, fam.tid, "objective: shared work", fam.owner_h) == 200
    viewer_h = await grantee(app, client, fam, "viewer")
    shapes = []
    for headers in (fam.owner_h, viewer_h):
        r = await client.post(
            f"/api/conversations/{fam.tid}/fork", json={"from_turn": 1}, headers=headers
        )
        assert r.status_code == 201, r.text
        copy = r.json()["thread_id"]
        assert await turn(client, copy, "todo: mine", headers) == 200
        g = (await client.get(f"/api/conversations/{copy}/graph", headers=headers)).json()
        msgs = (await client.get(f"/api/conversations/{copy}/messages", headers=headers)).json()
        shapes.append(
            (
                [n["id"] for n in g["nodes"]] == [f"{copy}:2"],
                len(g["threads"]),
                [m["turn_index"] for m in msgs if m["role"] == "user"],
            )
        )
    assert shapes == [(True, 1, [1, 2]), (True, 1, [1, 2])]


async def test_commenter_notes_name_their_author(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    assert await turn(client, fam.tid, "objective: x", fam.owner_h) == 200
    user, user_h = await new_user(app, "cm")
    await share(client, fam, "commenter", user=user.name)
    viewer_h = await grantee(app, client, fam, "viewer")
    url = f"/api/conversations/{fam.tid}/nodes/1/notes"
    r = await client.post(url, json={"text": "looks right"}, headers=user_h)
    assert r.status_code == 201, r.text
    assert (r.json()["author"], r.json()["mine"]) == (user.name, True)
    assert (await client.post(url, json={"text": "no"}, headers=viewer_h)).status_code == 403
    notes = (await client.get(f"/api/conversations/{fam.tid}/notes", headers=fam.owner_h)).json()
    # `mine` tells each caller which notes it may change (the studio offers no delete
    # on the others).
    assert [(n["text"], n["author"], n["mine"]) for n in notes] == [
        ("looks right", user.name, False)
    ]
    theirs = (await client.get(f"/api/conversations/{fam.tid}/notes", headers=user_h)).json()
    assert [n["mine"] for n in theirs] == [True]
    node = (await client.get(f"/api/conversations/{fam.tid}/nodes/1", headers=fam.owner_h)).json()
    assert [n["mine"] for n in node["notes"]] == [False]
    # The owner cannot rewrite the commenter's words; the commenter can.
    note = f"/api/notes/{notes[0]['id']}"
    assert (await client.patch(note, json={"text": "x"}, headers=fam.owner_h)).status_code == 403
    assert (await client.patch(note, json={"text": "ok"}, headers=user_h)).status_code == 200


async def test_share_actions_name_their_author(app: FastAPI, client: httpx.AsyncClient) -> None:
    """Creation and revocation are actions on the family's stream, with their author."""
    fam = await new_family(app)
    made = await share(client, fam, "viewer")
    await client.delete(f"/api/shares/{made['id']}", headers=fam.owner_h)
    async with db_of(app).read() as s:
        stmt = select(ActionLogEntry.action).where(ActionLogEntry.root_thread_id == fam.tid)
        rows = (await s.execute(stmt)).scalars().all()
        changes = [a for a in rows if a.get("change") in ("shared", "unshared")]
    assert [(a["change"], a["share_id"], a["author_id"]) for a in changes] == [
        ("shared", made["id"], fam.owner.id),
        ("unshared", made["id"], fam.owner.id),
    ]
    assert {a["author"] for a in changes} == {fam.owner.name}
    # A grantee's catalogue write (an editor renames a branch) names the grantee.
    editor, editor_h = await new_user(app, "au")
    await share(client, fam, "editor", user=editor.name)
    r = await client.patch(f"/api/conversations/{fam.tid}", json={"name": "ed"}, headers=editor_h)
    assert r.status_code == 200
    async with db_of(app).read() as s:
        stmt = select(ActionLogEntry.action).where(ActionLogEntry.root_thread_id == fam.tid)
        renamed = [a for a in (await s.execute(stmt)).scalars() if a.get("change") == "renamed"]
    assert [a["author"] for a in renamed] == [editor.name]


async def test_auth_none_refuses_sharing(app: FastAPI, client: httpx.AsyncClient) -> None:
    app.state.settings.auth = "none"
    from haico.services.access import users

    app.state.local_user = await users.ensure_local(db_of(app), name=f"l-{uuid.uuid4().hex[:8]}")
    created = (await client.post("/api/conversations", json={"title": "t"})).json()
    url = f"/api/conversations/{created['thread_id']}/shares"
    for r in (await client.post(url, json={"role": "viewer"}), await client.get(url)):
        assert r.status_code == 400 and r.json()["code"] == "sharing_needs_token_auth"
    assert (await client.delete("/api/shares/1")).status_code == 400


async def test_search_covers_shared_only_when_asked(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    fam = await new_family(app)
    word = "zebra" + uuid.uuid4().hex[:6]
    assert await turn(client, fam.tid, f"objective: {word}", fam.owner_h) == 200
    user, user_h = await new_user(app, "se")
    await share(client, fam, "viewer", user=user.name)
    link = await share(client, fam, "viewer")
    for headers in (user_h, bearer(link["token"])):
        plain = (await client.get("/api/search", params={"q": word}, headers=headers)).json()
        assert plain["results"] == []
        r = await client.get("/api/search", params={"q": word, "shared": "true"}, headers=headers)
        assert {h["root_thread_id"] for h in r.json()["results"]} == {fam.tid}, r.text
    # Revoked: gone from the grantee's search.
    users_share = await client.get(f"/api/conversations/{fam.tid}/shares", headers=fam.owner_h)
    named = next(s for s in users_share.json() if s["user"] == user.name)
    await client.delete(f"/api/shares/{named['id']}", headers=fam.owner_h)
    r = await client.get("/api/search", params={"q": word, "shared": "true"}, headers=user_h)
    assert r.json()["results"] == []


async def test_an_editors_edits_name_the_editor(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    assert await turn(client, fam.tid, "objective: start", fam.owner_h) == 200
    editor, editor_h = await new_user(app, "ed")
    await share(client, fam, "editor", user=editor.name)
    r = await client.put(
        f"/api/conversations/{fam.tid}/objective", json={"text": "edited"}, headers=editor_h
    )
    assert r.status_code == 200
    r = await client.put(
        f"/api/conversations/{fam.tid}/document", json={"content": "mine"}, headers=fam.owner_h
    )
    assert r.status_code == 200
    edits = (
        await client.get(f"/api/conversations/{fam.tid}/edits?origin=user", headers=fam.owner_h)
    ).json()
    by_surface = {e["surface"]: e["author"] for e in edits}
    assert by_surface["objective"] == editor.name
    assert by_surface["document"] == fam.owner.name
