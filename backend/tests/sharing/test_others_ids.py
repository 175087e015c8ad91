"""Ids of other people's things: a share, note or job of a family the caller cannot
read is answered exactly as an id that names nothing (404, the same body), never a 403
naming the family; share ids cannot be counted."""

from __future__ import annotations

import re
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.db.models import Job
from tests.helpers import db_of
from tests.share_helpers import bearer, new_family, new_user, share, turn


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


def _names_nothing(r: httpx.Response, *secrets: str) -> dict[str, Any]:
    assert r.status_code == 404, r.text
    for secret in secrets:
        assert secret not in r.text
    assert "another user" not in r.text
    body: dict[str, Any] = r.json()
    return body


async def test_share_ids_cannot_be_counted_nor_probed(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    fam = await new_family(app)
    _, stranger_h = await new_user(app, "str")
    made = [await share(client, fam, "viewer") for _ in range(3)]
    ids = [m["id"] for m in made]
    assert all(isinstance(i, str) and re.fullmatch(r"shr_[0-9a-f]{24}", i) for i in ids)
    assert len(set(ids)) == 3
    # A stranger's DELETE of a real share and of ids that name nothing: one answer.
    real = _names_nothing(await client.delete(f"/api/shares/{ids[0]}", headers=stranger_h), fam.tid)
    for probe in ("1", "2", "shr_" + "0" * 24):
        r = await client.delete(f"/api/shares/{probe}", headers=stranger_h)
        assert _names_nothing(r, fam.tid) == real
    # ... and the share still works.
    listed = (await client.get(f"/api/conversations/{fam.tid}/shares", headers=fam.owner_h)).json()
    assert not any(s["revoked"] for s in listed)
    # A user whose share was revoked cannot read the family either: 404 too.
    revoked, revoked_h = await new_user(app, "rev")
    theirs = await share(client, fam, "viewer", user=revoked.name)
    assert (
        await client.delete(f"/api/shares/{theirs['id']}", headers=fam.owner_h)
    ).status_code == 204
    r = await client.delete(f"/api/shares/{ids[2]}", headers=revoked_h)
    assert _names_nothing(r, fam.tid) == real
    # A reader of the family who is not its owner still gets the family's own 403.
    r = await client.delete(f"/api/shares/{ids[2]}", headers=bearer(made[2]["token"]))
    assert r.status_code == 403 and fam.tid not in r.text
    assert (await client.delete(f"/api/shares/{ids[2]}", headers=fam.owner_h)).status_code == 204


async def test_notes_of_an_unreadable_family_are_no_notes(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    fam = await new_family(app)
    commenter, commenter_h = await new_user(app, "com")
    await share(client, fam, "commenter", user=commenter.name)
    editor, editor_h = await new_user(app, "edi")
    await share(client, fam, "editor", user=editor.name)
    _, stranger_h = await new_user(app, "str")
    assert await turn(client, fam.tid, "hello", fam.owner_h) == 200
    r = await client.post(
        f"/api/conversations/{fam.tid}/nodes/1/notes",
        json={"text": "mine", "codes": []},
        headers=commenter_h,
    )
    assert r.status_code == 201, r.text
    note_id = r.json()["id"]
    unknown = _names_nothing(
        await client.patch("/api/notes/999999999", json={"text": "x"}, headers=stranger_h)
    )
    for method, body in (("PATCH", {"text": "x"}), ("DELETE", None)):
        r = await client.request(method, f"/api/notes/{note_id}", json=body, headers=stranger_h)
        assert _names_nothing(r, fam.tid, "mine") == unknown
        # A reader of the family: 403, the note is someone else's.
        r = await client.request(method, f"/api/notes/{note_id}", json=body, headers=editor_h)
        assert r.status_code == 403 and fam.tid not in r.text
    notes = (await client.get(f"/api/conversations/{fam.tid}/notes", headers=fam.owner_h)).json()
    assert [n["text"] for n in notes] == ["mine"]


async def test_jobs_of_an_unreadable_family_are_no_jobs(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    fam = await new_family(app)
    editor, editor_h = await new_user(app, "edi")
    await share(client, fam, "editor", user=editor.name)
    _, stranger_h = await new_user(app, "str")
    async with db_of(app).transaction() as s:
        s.add(
            Job(
                id="job_" + fam.tid[3:27],
                user_id=fam.owner.id,
                root_thread_id=fam.tid,
                kind="replay",
                state="done",
                spec={},
                done=1,
                total=1,
                thread_ids=[],
            )
        )
    job = "job_" + fam.tid[3:27]
    unknown = _names_nothing(await client.get("/api/jobs/job_nothing", headers=stranger_h))
    for method, path in (("GET", f"/api/jobs/{job}"), ("POST", f"/api/jobs/{job}/cancel")):
        r = await client.request(method, path, headers=stranger_h)
        assert _names_nothing(r, fam.tid) == unknown
        r = await client.request(method, path, headers=editor_h)
        assert r.status_code == 403 and fam.tid not in r.text
    r = await client.get(f"/api/jobs/{job}", headers=fam.owner_h)
    assert r.status_code == 200 and r.json()["state"] == "done"
