"""A participant token on AHP: it connects and reaches its own family only (another
participant's chat, a stranger's, a new session or a fork: refused), its condition
holds there as on REST (no checkout off the head in a linear condition), consent comes
before its first turn, and the study's owner follows its chat read-only."""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from websockets.exceptions import ConnectionClosed, InvalidStatus

from tests.ahp.live import chat_of, send, session_of
from tests.ahp.wire import AhpClient, RpcFailure
from tests.history_helpers import live_server
from tests.share_helpers import new_family
from tests.studies.kit import LINEAR, join, make_study, owner


async def _refused(client: AhpClient, method: str, params: dict[str, Any]) -> RpcFailure:
    with pytest.raises(RpcFailure) as caught:
        await client.request(method, params)
    assert caught.value.code in (-32008, -32009), (method, caught.value.code)
    return caught.value


def _turn_started(seq: int, text: str) -> dict[str, Any]:
    return {
        "type": "chat/turnStarted",
        "turnId": f"client-{seq}",
        "startedAt": "2024-01-01T00:00:00Z",
        "message": {"text": text, "origin": {"kind": "user"}},
    }


async def test_a_participant_on_ahp_reaches_its_family_only(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    who = await owner(app)
    study = await make_study(
        client, who, conditions=[{"name": "linear", "features": LINEAR}], consent="Agree?"
    )
    p, q = await join(client, study), await join(client, study)
    stranger = await new_family(app)
    chat = chat_of(p.thread_id)
    async with live_server(app) as base:
        with pytest.raises((InvalidStatus, ConnectionClosed)):
            await AhpClient.open(base, token="pt_made_up")
        c = await AhpClient.open(base, token=p.token)
        await c.initialize(["1.0.0"])
        listed = json.dumps(await c.request("listSessions", {}))
        assert session_of(p.thread_id) in listed
        assert session_of(q.thread_id) not in listed
        await c.request("subscribe", {"channel": chat})
        # Before consent: the turn comes back rejected, nothing ran.
        await c.notify(
            "dispatchAction",
            {"channel": chat, "clientSeq": 1, "action": _turn_started(1, "todo: early")},
        )
        echoed = await c.wait_for(lambda e: e.get("origin", {}).get("clientSeq") == 1)
        assert "rejectionReason" in echoed, echoed
        r = await client.post("/api/studies/participants/me/consent", headers=p.h)
        assert r.status_code == 200
        first = await send(c, chat, "todo: one", 2)
        await send(c, chat, "todo: two", 3)
        # The linear condition: no checkout off the head, here either.
        failure = await _refused(c, "checkoutChatHistory", {"channel": chat, "turnId": first})
        assert failure.code == -32009
        # Nothing of anyone else's, no new session, no fork.
        for tid in (q.thread_id, stranger.tid):
            await _refused(c, "subscribe", {"channel": chat_of(tid)})
            await _refused(c, "fetchTurns", {"channel": chat_of(tid), "parentTurnId": None})
        await _refused(c, "createSession", {"channel": f"ahp-session:/{uuid.uuid4()}"})
        await _refused(
            c,
            "createChat",
            {
                "channel": session_of(p.thread_id),
                "chat": f"ahp-chat:/{uuid.uuid4()}",
                "source": {"kind": "fork", "chat": chat, "turnId": first},
            },
        )
        await _refused(c, "disposeSession", {"channel": session_of(p.thread_id)})
        # The study's owner follows the chat and cannot send in it.
        o = await AhpClient.open(base, token=who.h["Authorization"][7:])
        await o.initialize(["1.0.0"])
        await o.request("subscribe", {"channel": chat})
        third = await send(c, chat, "todo: three", 4)
        await o.wait_for(
            lambda e: (
                e["action"].get("type") == "chat/turnComplete"
                and e["action"].get("turnId") == third
            )
        )
        await o.notify(
            "dispatchAction",
            {"channel": chat, "clientSeq": 9, "action": _turn_started(9, "todo: owner")},
        )
        echoed = await o.wait_for(lambda e: e.get("origin", {}).get("clientSeq") == 9)
        assert echoed["rejectionReason"].startswith("PermissionDenied (-32009)"), echoed
        for each in (c, o):
            assert not each.invalid, each.invalid
            await each.close()
    ws = await client.get(f"/api/conversations/{p.thread_id}/workspace", headers=p.h)
    assert [t["text"] for t in ws.json()["todos"]][-3:] == ["one", "two", "three"]
