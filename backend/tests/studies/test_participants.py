"""A participant token: its own family and nothing else, consent before any write when
the study asks for it, read-only once finished, its condition's model only, and no
sharing, studies, profiles, imports or exports."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from tests.share_helpers import new_family
from tests.studies.kit import join, make_study, owner, send


async def test_a_participant_reaches_its_own_family_only(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    who = await owner(app)
    study = await make_study(client, who)
    p, q = await join(client, study), await join(client, study)
    other = await new_family(app)
    r = await send(client, p.thread_id, "todo: mine", p.h)
    assert r.status_code == 200, r.text
    assert (
        await client.get(f"/api/conversations/{p.thread_id}/graph", headers=p.h)
    ).status_code == 200
    # Another participant's family, and anybody else's: 403 for reads and writes.
    for tid in (q.thread_id, other.tid):
        for method, path, body in (
            ("GET", f"/api/conversations/{tid}", None),
            ("GET", f"/api/conversations/{tid}/workspace", None),
            ("PUT", f"/api/conversations/{tid}/objective", {"text": "x"}),
            ("POST", f"/api/conversations/{tid}/turns", {"content": "x"}),
        ):
            r = await client.request(method, path, json=body, headers=p.h)
            assert r.status_code == 403, (method, path, r.text)
    # Its listing holds its own family only.
    listed = (await client.get("/api/conversations", headers=p.h)).json()
    assert {c["root_thread_id"] for c in listed} == {p.thread_id}
    # What it may never do, even on its own family.
    for method, path, body in (
        ("POST", f"/api/conversations/{p.thread_id}/shares", {"role": "viewer"}),
        ("GET", f"/api/conversations/{p.thread_id}/shares", None),
        ("GET", "/api/studies", None),
        ("GET", f"/api/studies/{study['id']}", None),
        ("POST", "/api/studies", {"name": "S", "conditions": [{"name": "a"}]}),
        ("GET", "/api/profiles", None),
        ("POST", "/api/profiles", {"name": "p", "provider": "offline"}),
        ("POST", "/api/conversations", {"title": "new"}),
        ("POST", f"/api/conversations/{p.thread_id}/fork", {"from_turn": 0}),
        ("GET", f"/api/conversations/{p.thread_id}/export", None),
        ("GET", f"/api/conversations/{p.thread_id}/export.csv", None),
        ("GET", f"/api/conversations/{p.thread_id}/path", None),
        ("GET", "/api/export.csv", None),
        ("DELETE", f"/api/conversations/{p.thread_id}", None),
    ):
        r = await client.request(method, path, json=body, headers=p.h)
        assert r.status_code == 403, (method, path, r.text)
    r = await client.post("/api/conversations/import", json={}, headers=p.h)
    assert r.status_code in (403, 422)
    # A made-up participant token is nobody.
    r = await client.get(
        f"/api/conversations/{p.thread_id}", headers={"Authorization": "Bearer pt_nope"}
    )
    assert r.status_code == 401


async def test_me_names_the_session_and_nothing_of_anyone(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    who = await owner(app)
    study = await make_study(client, who, consent="Yes?")
    p = await join(client, study)
    me = (await client.get("/api/studies/participants/me", headers=p.h)).json()
    assert me == {
        "participant": "P001",
        "study": {"id": study["id"], "name": study["name"], "consent": "Yes?"},
        "condition": {
            "id": study["conditions"][0]["id"],
            "name": "branching",
            "features": study["conditions"][0]["features"],
        },
        "thread_id": p.thread_id,
        "state": "joined",
    }
    assert study["join_token"] not in str(me) and who.user.name not in str(me)
    # Only a participant has a session.
    for path in ("", "/consent", "/finish"):
        method = "GET" if not path else "POST"
        r = await client.request(method, f"/api/studies/participants/me{path}", headers=who.h)
        assert r.status_code == 403, r.text


async def test_consent_comes_before_the_first_turn(app: FastAPI, client: httpx.AsyncClient) -> None:
    who = await owner(app)
    study = await make_study(client, who, consent="I agree.")
    p = await join(client, study)
    tid = p.thread_id
    for method, path, body in (
        ("POST", f"/api/conversations/{tid}/turns", {"content": "todo: early"}),
        ("PUT", f"/api/conversations/{tid}/objective", {"text": "early"}),
    ):
        r = await client.request(method, path, json=body, headers=p.h)
        assert r.status_code == 403 and r.json()["code"] == "consent_required", r.text
    # It reads its family all the same.
    assert (await client.get(f"/api/conversations/{tid}/workspace", headers=p.h)).status_code == 200
    r = await client.post("/api/studies/participants/me/consent", headers=p.h)
    assert r.status_code == 200 and r.json()["state"] == "consented"
    assert (await send(client, tid, "todo: now", p.h)).status_code == 200
    # Again changes nothing.
    again = await client.post("/api/studies/participants/me/consent", headers=p.h)
    assert again.json()["state"] == "consented"
    # A study without consent text asks for none.
    open_study = await make_study(client, who)
    q = await join(client, open_study)
    assert (await send(client, q.thread_id, "todo: at once", q.h)).status_code == 200


async def test_finish_makes_the_family_read_only(app: FastAPI, client: httpx.AsyncClient) -> None:
    who = await owner(app)
    study = await make_study(client, who)
    p = await join(client, study)
    tid = p.thread_id
    assert (await send(client, tid, "todo: one", p.h)).status_code == 200
    r = await client.post("/api/studies/participants/me/finish", headers=p.h)
    assert r.status_code == 200 and r.json()["state"] == "finished"
    for method, path, body in (
        ("POST", f"/api/conversations/{tid}/turns", {"content": "todo: late"}),
        ("PUT", f"/api/conversations/{tid}/objective", {"text": "late"}),
        ("POST", f"/api/conversations/{tid}/checkout", {"turn_id": None}),
        ("POST", f"/api/conversations/{tid}/branch", {"from_turn": 0}),
        ("POST", "/api/studies/participants/me/consent", None),
    ):
        r = await client.request(method, path, json=body, headers=p.h)
        assert r.status_code in (200, 403), r.text
        if "consent" not in path:
            assert r.status_code == 403, (method, path, r.text)
    # Reads still work; the state stays finished.
    ws = await client.get(f"/api/conversations/{tid}/workspace", headers=p.h)
    assert ws.status_code == 200 and [t["text"] for t in ws.json()["todos"]][-1] == "one"
    me = (await client.get("/api/studies/participants/me", headers=p.h)).json()
    assert me["state"] == "finished"


async def test_a_participant_runs_with_its_conditions_profile_only(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    who = await owner(app)
    made = await client.post(
        "/api/profiles",
        json={"name": "seeded", "provider": "offline", "params": {"seed": 7}},
        headers=who.h,
    )
    profile = made.json()["id"]
    study = await make_study(client, who, conditions=[{"name": "a", "profile_id": profile}])
    p = await join(client, study)
    tid = p.thread_id
    # Not the server's default, nor any other profile: not for the branch, not for a turn.
    for body in ({"profile_id": "default"}, {"profile_id": "pr_other"}):
        r = await client.patch(f"/api/conversations/{tid}", json=body, headers=p.h)
        assert r.status_code in (403, 404), r.text
        r = await client.post(
            f"/api/conversations/{tid}/turns", json={"content": "x", **body}, headers=p.h
        )
        assert r.status_code in (403, 404), r.text
    conv = (await client.get(f"/api/conversations/{tid}", headers=p.h)).json()
    assert conv["profile_id"] == profile
    # Its own condition's profile it may name.
    r = await client.post(
        f"/api/conversations/{tid}/turns",
        json={"content": "todo: ok", "profile_id": profile},
        headers=p.h,
    )
    assert r.status_code == 200, r.text
