"""Sharing on AHP: a link or a grantee subscribes to the shared chat and sees its turns;
a `dispatchAction` above its role comes back rejected (PermissionDenied); a link makes
no sessions or forks; a revoked link's open connection is closed within seconds; a
named grantee whose share is revoked or expires stops hearing the family."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.ahp.live import chat_of, send, session_of
from tests.ahp.wire import AhpClient, RpcFailure
from tests.history_helpers import live_server
from tests.share_helpers import expire, grantee, new_family, new_user, share, soon


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


def _turn_started(seq: int) -> dict[str, Any]:
    return {
        "type": "chat/turnStarted",
        "turnId": f"client-{seq}",
        "startedAt": "2024-01-01T00:00:00Z",
        "message": {"text": "objective: mine now", "origin": {"kind": "user"}},
    }


async def test_grantees_on_ahp(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    chat = chat_of(fam.tid)
    viewer, viewer_h = await new_user(app, "av")
    await share(client, fam, "viewer", user=viewer.name)
    editor, editor_h = await new_user(app, "ae")
    await share(client, fam, "editor", user=editor.name)
    link = await share(client, fam, "commenter")
    async with live_server(app) as base:
        owner_c = await AhpClient.open(base, token=fam.owner_h["Authorization"][7:])
        await owner_c.initialize(["1.0.0"])
        await owner_c.request("subscribe", {"channel": chat})
        clients = []
        for token in (viewer_h["Authorization"][7:], link["token"]):
            c = await AhpClient.open(base, token=token)
            await c.initialize(["1.0.0"])
            await c.request("subscribe", {"channel": chat})
            await c.request("subscribe", {"channel": session_of(fam.tid)})
            clients.append(c)
        # The owner's turn reaches the grantees live.
        first = await send(owner_c, chat, "objective: shared", 1)
        for c in clients:
            await c.wait_for(
                lambda e: (
                    e["action"].get("type") == "chat/turnComplete"
                    and e["action"].get("turnId") == first
                )
            )
        # Above their role: rejected, PermissionDenied; nothing ran.
        for i, c in enumerate(clients):
            seq = 10 + i
            await c.notify(
                "dispatchAction", {"channel": chat, "clientSeq": seq, "action": _turn_started(seq)}
            )
            echoed = await c.wait_for(lambda e, s=seq: e.get("origin", {}).get("clientSeq") == s)
            assert echoed["rejectionReason"].startswith("PermissionDenied (-32009)"), echoed
        # A link makes no session and no fork.
        link_c = clients[1]
        with pytest.raises(RpcFailure) as caught:
            await link_c.request(
                "createChat",
                {
                    "channel": session_of(fam.tid),
                    "chat": "ahp-chat:/00000000-0000-4000-8000-000000000001",
                    "source": {"kind": "fork", "chat": chat, "turnId": first},
                },
            )
        assert caught.value.code == -32009
        # An editor's dispatch runs.
        editor_c = await AhpClient.open(base, token=editor_h["Authorization"][7:])
        await editor_c.initialize(["1.0.0"])
        await editor_c.request("subscribe", {"channel": chat})
        second = await send(editor_c, chat, "objective: by the editor", 20)
        assert second == f"{fam.tid}:2"
        ws = await client.get(f"/api/conversations/{fam.tid}/workspace", headers=fam.owner_h)
        assert ws.json()["objective"] == "by the editor"
        for c in (owner_c, editor_c, *clients):
            assert not c.invalid, c.invalid
            await c.close()


async def test_revoked_link_connection_closes(app: FastAPI, client: httpx.AsyncClient) -> None:
    fam = await new_family(app)
    link = await share(client, fam, "viewer")
    async with live_server(app) as base:
        c = await AhpClient.open(base, token=link["token"])
        await c.initialize(["1.0.0"])
        await c.request("subscribe", {"channel": chat_of(fam.tid)})
        r = await client.delete(f"/api/shares/{link['id']}", headers=fam.owner_h)
        assert r.status_code == 204
        started = asyncio.get_running_loop().time()
        await asyncio.wait_for(c.task, timeout=10)
        took = asyncio.get_running_loop().time() - started
        assert c.close_code == 1008 and took < 6, (c.close_code, took)
        # And it cannot come back.
        with pytest.raises(Exception):  # noqa: B017 - the handshake is refused
            again = await AhpClient.open(base, token=link["token"])
            await again.initialize(["1.0.0"])


@pytest.mark.parametrize("end", ["revoke", "expire"])
async def test_revoked_grantee_stops_hearing(
    app: FastAPI, client: httpx.AsyncClient, end: str
) -> None:
    """A named viewer's subscription ends within seconds of the share's revocation or
    expiry: the owner's next turn does not reach it, and it cannot subscribe again."""
    from haico.ahp.state import ConnectionState
    from tests.ahp.live import until

    fam = await new_family(app)
    chat = chat_of(fam.tid)
    viewer, viewer_h = await new_user(app, "rg")
    made = await share(client, fam, "viewer", user=viewer.name, expires_at=soon())
    async with live_server(app) as base:
        owner_c = await AhpClient.open(base, token=fam.owner_h["Authorization"][7:])
        await owner_c.initialize(["1.0.0"])
        await owner_c.request("subscribe", {"channel": chat})
        c = await AhpClient.open(base, token=viewer_h["Authorization"][7:])
        await c.initialize(["1.0.0"])
        await c.request("subscribe", {"channel": chat})
        first = await send(owner_c, chat, "objective: before", 1)
        await c.wait_for(lambda e: e["action"].get("turnId") == first)
        if end == "revoke":
            gone = await client.delete(f"/api/shares/{made['id']}", headers=fam.owner_h)
            assert gone.status_code == 204
        else:
            await expire(app, made["id"])
        started = asyncio.get_running_loop().time()

        def dropped() -> bool:
            mine = [x for x in ConnectionState.live if x.user.id == viewer.id]
            return bool(mine) and all(chat not in x.subs for x in mine)

        await until(dropped, within=8, what="the revoked viewer's subscription dropped")
        assert asyncio.get_running_loop().time() - started < 6
        second = await send(owner_c, chat, "objective: after", 2)
        await owner_c.wait_for(
            lambda e: (
                e["action"].get("type") == "chat/turnComplete"
                and e["action"].get("turnId") == second
            )
        )
        assert all(e["action"].get("turnId") != second for e in c.actions)
        with pytest.raises(RpcFailure):
            await c.request("subscribe", {"channel": chat})
        for x in (owner_c, c):
            await x.close()


@pytest.mark.parametrize("role", ["viewer", "commenter", "editor", "link-viewer", "link-commenter"])
async def test_ahp_role_matrix(app: FastAPI, client: httpx.AsyncClient, role: str) -> None:
    """Every role × the AHP commands on a shared chat: reads for all; a checkout and a
    turn for editors only (-32009 / rejected PermissionDenied); a fork for named users
    (a link owns nothing); disposing the session for nobody but the owner."""
    async with live_server(app) as base:
        fam = await new_family(app)
        chat, session = chat_of(fam.tid), session_of(fam.tid)
        owner_c = await AhpClient.open(base, token=fam.owner_h["Authorization"][7:])
        await owner_c.initialize(["1.0.0"])
        await owner_c.request("subscribe", {"channel": chat})
        first = await send(owner_c, chat, "objective: one", 1)
        headers = await grantee(app, client, fam, role)
        c = await AhpClient.open(base, token=headers["Authorization"][7:])
        await c.initialize(["1.0.0"])
        await c.request("subscribe", {"channel": chat})
        await c.request("subscribe", {"channel": session})
        await c.request("fetchTurns", {"channel": chat, "parentTurnId": None})
        editor = role == "editor"

        async def refused(method: str, params: dict[str, Any]) -> None:
            with pytest.raises(RpcFailure) as caught:
                await c.request(method, params)
            assert caught.value.code == -32009, (role, method, caught.value.message)

        if editor:
            await c.request("checkoutChatHistory", {"channel": chat, "turnId": first})
        else:
            await refused("checkoutChatHistory", {"channel": chat, "turnId": first})
        await c.notify(
            "dispatchAction", {"channel": chat, "clientSeq": 5, "action": _turn_started(5)}
        )
        echoed = await c.wait_for(lambda e: e.get("origin", {}).get("clientSeq") == 5)
        if editor:
            assert "rejectionReason" not in echoed, (role, echoed)
            await c.wait_for(
                lambda e: (
                    e["action"].get("type") == "chat/turnComplete"
                    and e["action"].get("turnId") == f"{fam.tid}:2"
                )
            )
        else:
            assert echoed["rejectionReason"].startswith("PermissionDenied"), (role, echoed)
        fork = {
            "channel": session,
            "chat": f"ahp-chat:/{uuid.uuid4()}",
            "source": {"kind": "fork", "chat": chat, "turnId": first},
        }
        if role.startswith("link-"):
            await refused("createChat", fork)
        else:
            await c.request("createChat", fork)
        await refused("disposeSession", {"channel": session})
        assert not c.invalid, c.invalid
        for x in (owner_c, c):
            await x.close()
