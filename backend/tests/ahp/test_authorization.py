"""AHP authorization, command by command: in token mode a handshake without a token or
with an unknown one is refused, and a signed-in user can never subscribe to, fetch
turns of, check out, send to, fork or dispose of another user's chat, nor learn
anything about it from the errors; the owner can do all of it."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from websockets.exceptions import ConnectionClosed, InvalidStatus

from haico.services.access import users
from tests.ahp.live import chat_of, send, session_of
from tests.ahp.wire import AhpClient, RpcFailure
from tests.helpers import db_of
from tests.history_helpers import live_server

SECRET = "objective-only-ana-knows"


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


async def _refused(client: AhpClient, method: str, params: dict[str, Any]) -> RpcFailure:
    with pytest.raises(RpcFailure) as caught:
        await client.request(method, params)
    failure = caught.value
    assert failure.code in (-32008, -32009), (method, failure.code, failure.message)
    leaked = json.dumps({"message": failure.message, "data": failure.data})
    assert SECRET not in leaked and "first question" not in leaked, leaked
    return failure


async def test_another_users_chat_is_out_of_reach(app: FastAPI, client: httpx.AsyncClient) -> None:
    db = db_of(app)
    _, ana_token = await users.create(db, name=f"ana-{uuid.uuid4().hex[:8]}")
    _, bob_token = await users.create(db, name=f"bob-{uuid.uuid4().hex[:8]}")
    ana = {"Authorization": f"Bearer {ana_token}"}
    created = await client.post("/api/conversations", json={"objective": SECRET}, headers=ana)
    tid = created.json()["thread_id"]
    chat, session = chat_of(tid), session_of(tid)

    async with live_server(app) as base:
        # No token, an unknown token: the handshake itself is refused.
        with pytest.raises(InvalidStatus):
            await AhpClient.open(base)
        with pytest.raises((InvalidStatus, ConnectionClosed)):
            await AhpClient.open(base, token="not-a-token")

        owner = await AhpClient.open(base, token=ana_token)
        await owner.initialize(["1.0.0"])
        await owner.request("subscribe", {"channel": chat})
        first = await send(owner, chat, "first question", 1)
        await send(owner, chat, "second question", 2)

        bob = await AhpClient.open(base, token=bob_token)
        await bob.initialize(["1.0.0"])
        listed = await bob.request("listSessions", {})
        assert session not in json.dumps(listed)
        await _refused(bob, "subscribe", {"channel": chat})
        await _refused(bob, "subscribe", {"channel": session})
        await _refused(bob, "fetchTurns", {"channel": chat, "parentTurnId": None})
        await _refused(bob, "checkoutChatHistory", {"channel": chat, "turnId": first})
        fork_uri = f"ahp-chat:/{uuid.uuid4()}"
        await _refused(
            bob,
            "createChat",
            {
                "channel": session,
                "chat": fork_uri,
                "source": {"kind": "fork", "chat": chat, "turnId": first},
            },
        )
        await _refused(bob, "disposeSession", {"channel": session})
        # A turn dispatched into someone else's chat comes back rejected.
        await bob.notify(
            "dispatchAction",
            {
                "channel": chat,
                "clientSeq": 7,
                "action": {
                    "type": "chat/turnStarted",
                    "turnId": "bob-1",
                    "startedAt": "2024-01-01T00:00:00Z",
                    "message": {"text": "let me in", "origin": {"kind": "user"}},
                },
            },
        )
        echoed = await bob.wait_for(lambda e: e.get("origin", {}).get("clientSeq") == 7)
        assert "rejectionReason" in echoed and SECRET not in json.dumps(echoed)
        # A reconnect naming the chat reports it missing (or, when the shared log no
        # longer reaches back, gives no snapshot of it) and replays nothing of it.
        again = await AhpClient.open(base, token=bob_token)
        result = await again.request(
            "reconnect",
            {"clientId": "bob", "lastSeenServerSeq": 0, "subscriptions": [chat]},
        )
        if result["type"] == "replay":
            assert chat in result.get("missing", []), result
        else:  # the log window no longer reaches back: snapshots, none of that chat
            assert all(snap.get("resource") != chat for snap in result["snapshots"]), result
        assert SECRET not in json.dumps(result) and "first question" not in json.dumps(result)
        # Bob saw nothing of Ana's chat at any point (its id is in his own request, and
        # "another user's" is the same 403/404 split as REST, docs/api.md "Errors").
        seen = json.dumps([bob.actions, bob.notifications, again.actions])
        assert SECRET not in seen and "first question" not in seen
        assert all(a.get("rejectionReason") for a in bob.actions), bob.actions

        # Ana's family is as she left it: two turns, the head on the second, not disposed.
        h = (await client.get(f"/api/conversations/{tid}/history", headers=ana)).json()
        assert h["head_turn_id"] == f"{tid}:2"
        conv = await client.get(f"/api/conversations/{tid}", headers=ana)
        assert conv.status_code == 200 and conv.json()["turn_index"] == 2
        # The owner can do what Bob could not.
        await owner.request("fetchTurns", {"channel": chat, "parentTurnId": None})
        await owner.request("checkoutChatHistory", {"channel": chat, "turnId": first})
        assert not owner.invalid and not bob.invalid and not again.invalid
        for c in (owner, bob, again):
            await c.close()
