"""The audit of a shared family: every write by a grantee names the grantee, so the
owner can see who did what. An editor's send, checkout and merge name the editor: the
node (`GET …/nodes/{k}` `author`, a merge's edits), the logged `chat/turnStarted`
(its message's `_meta["haico/author"]`, beside a merge's `haico/mergedFrom`) and
`chat/historyCheckedOut` (its `_meta`); the owner's own stay unnamed. On AHP an
editor's turn names the editor live, and in a snapshot rebuilt from the node records
once the log has let its actions go."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from haico.db.models import ActionLogEntry
from haico.domain import now
from haico.events import log as action_log
from tests.ahp.live import chat_of, send
from tests.ahp.wire import AhpClient
from tests.helpers import db_of
from tests.history_helpers import live_server
from tests.share_helpers import new_family, new_user, share, turn


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def _log(app: FastAPI, root: str) -> list[dict[str, Any]]:
    async with db_of(app).read() as s:
        stmt = (
            select(ActionLogEntry.action)
            .where(ActionLogEntry.root_thread_id == root)
            .order_by(ActionLogEntry.seq)
        )
        return list((await s.execute(stmt)).scalars())


def _meta(action: dict[str, Any]) -> dict[str, Any]:
    found: dict[str, Any] = action.get("_meta") or action.get("message", {}).get("_meta") or {}
    return found


async def test_an_editors_send_checkout_and_merge_name_the_editor(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    fam = await new_family(app)
    tid = fam.tid
    editor, editor_h = await new_user(app, "au")
    await share(client, fam, "editor", user=editor.name)
    assert await turn(client, tid, "objective: plan", fam.owner_h) == 200
    assert await turn(client, tid, "todo: draft outline", editor_h) == 200
    r = await client.post(
        f"/api/conversations/{tid}/branch", json={"from_turn": 1}, headers=editor_h
    )
    assert r.status_code == 201, r.text
    side = r.json()["thread_id"]
    # Sending there is the editor's implicit checkout of the branch.
    assert await turn(client, side, "todo: survey", editor_h) == 200
    r = await client.post(
        f"/api/conversations/{tid}/checkout", json={"turn_id": f"{tid}:2"}, headers=editor_h
    )
    assert r.status_code == 200, r.text
    r = await client.post(
        f"/api/conversations/{tid}/merge",
        json={"source": f"{side}:2", "mode": "merge"},
        headers=editor_h,
    )
    assert r.status_code == 201, r.text
    assert r.json()["node_id"] == f"{tid}:3"
    r = await client.post(
        f"/api/conversations/{tid}/checkout", json={"turn_id": f"{tid}:1"}, headers=fam.owner_h
    )
    assert r.status_code == 200, r.text

    async def node(thread_id: str, k: int) -> dict[str, Any]:
        r = await client.get(f"/api/conversations/{thread_id}/nodes/{k}", headers=fam.owner_h)
        assert r.status_code == 200, r.text
        out: dict[str, Any] = r.json()
        return out

    assert (await node(tid, 1))["author"] is None
    assert (await node(tid, 2))["author"] == editor.name
    assert (await node(side, 2))["author"] == editor.name
    merged = await node(tid, 3)
    assert (merged["kind"], merged["author"]) == ("merge", editor.name)
    merge_edits = [e for e in merged["edits"] if e["origin"] == "merge"]
    assert merge_edits and {e["author"] for e in merge_edits} == {editor.name}

    log = await _log(app, tid)
    started = {
        a["turnId"]: _meta(a).get("haico/author") for a in log if a["type"] == "chat/turnStarted"
    }
    assert started == {
        f"{tid}:1": None,
        f"{tid}:2": editor.name,
        f"{side}:2": editor.name,
        f"{tid}:3": editor.name,
    }
    merge_started = next(a for a in log if a.get("turnId") == f"{tid}:3")
    assert _meta(merge_started)["haico/mergedFrom"] == f"{side}:2"
    moves = [_meta(a).get("haico/author") for a in log if a["type"] == "chat/historyCheckedOut"]
    assert moves == [editor.name, editor.name, None], moves

    # The family's export names them; an import of it is the importer's (the owner:
    # no author named) and keeps each name as the node's `imported_author`.
    r = await client.get(f"/api/conversations/{tid}/export", headers=fam.owner_h)
    assert r.status_code == 200, r.text
    authors = {n["id"]: n["author"] for n in r.json()["nodes"]}
    assert authors == {
        f"{tid}:1": None,
        f"{tid}:2": editor.name,
        f"{side}:2": editor.name,
        f"{tid}:3": editor.name,
    }
    r = await client.post("/api/conversations/import", json=r.json(), headers=fam.owner_h)
    assert r.status_code == 201, r.text
    copy = r.json()["thread_id"]
    r = await client.get(f"/api/conversations/{copy}/nodes/2", headers=fam.owner_h)
    assert r.status_code == 200, r.text
    assert (r.json()["author"], r.json()["imported_author"]) == (None, editor.name), r.text
    r = await client.get(f"/api/conversations/{copy}/nodes/1", headers=fam.owner_h)
    assert r.status_code == 200, r.text
    assert (r.json()["author"], r.json()["imported_author"]) == (None, None), r.text


async def test_an_editors_ahp_turn_names_the_editor(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    fam = await new_family(app)
    chat = chat_of(fam.tid)
    editor, editor_h = await new_user(app, "aa")
    await share(client, fam, "editor", user=editor.name)
    async with live_server(app) as base:
        owner_c = await AhpClient.open(base, token=fam.owner_h["Authorization"][7:])
        await owner_c.initialize(["1.0.0"])
        await owner_c.request("subscribe", {"channel": chat})
        editor_c = await AhpClient.open(base, token=editor_h["Authorization"][7:])
        await editor_c.initialize(["1.0.0"])
        await editor_c.request("subscribe", {"channel": chat})
        mine = await send(owner_c, chat, "objective: mine", 1)
        theirs = await send(editor_c, chat, "objective: theirs", 2)
        seen = await owner_c.wait_for(
            lambda e: (
                e["action"].get("type") == "chat/turnStarted"
                and e["action"].get("turnId") == theirs
            )
        )
        assert _meta(seen["action"]) == {"haico/author": editor.name}
        async with db_of(app).transaction() as s:
            assert await action_log.prune_before(s, now() + timedelta(days=1)) > 0
        fresh = await AhpClient.open(base, token=fam.owner_h["Authorization"][7:])
        await fresh.initialize(["1.0.0"])
        result = await fresh.request("subscribe", {"channel": chat})
        turns = result["snapshot"]["state"]["turns"]
        assert _meta(turns[theirs]) == {"haico/author": editor.name}
        assert "_meta" not in turns[mine]["message"]
        for c in (owner_c, editor_c, fresh):
            assert not c.invalid, c.invalid
            await c.close()
