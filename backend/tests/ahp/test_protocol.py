"""The AHP host's protocol edges over a real WebSocket: version negotiation, the
token handshake, malformed input and limits, checkout errors, cursors."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from websockets.exceptions import ConnectionClosed, InvalidStatus

from haico.ahp.adapter import negotiate
from haico.config import Settings
from haico.db.engine import Database
from haico.services.access import users
from tests.ahp.wire import AhpClient, RpcFailure
from tests.server import Server


def test_caret_negotiation() -> None:
    assert negotiate(["1.0.0"]) == "1.0.0"
    assert negotiate(["1.4.2", "0.7.0"]) == "1.4.2"
    assert negotiate(["0.9.5"]) == "0.9.5"
    assert negotiate(["0.7.9", "0.8.0"]) == "0.7.9"
    assert negotiate(["0.8.0", "2.0.0", "0.6.9"]) is None


@pytest.fixture
async def server(server_env: dict[str, str]) -> AsyncIterator[Server]:
    env = {**server_env, "HAICO_AHP_MAX_FRAME_BYTES": "4096", "HAICO_AHP_REQUESTS_PER_SECOND": "20"}
    srv = Server(env)
    await srv.start()
    yield srv
    srv.stop()


async def test_unsupported_version_is_32005_then_close(server: Server) -> None:
    c = await AhpClient.open(server.url)
    with pytest.raises(RpcFailure) as err:
        await c.initialize(["0.8.0", "2.0.0"])
    assert err.value.code == -32005
    assert err.value.data == {"supportedVersions": ["1.0.0", "0.9.0", "0.7.0"]}
    await asyncio.wait_for(c.task, 5)
    assert c.close_code is not None
    assert not c.invalid


async def test_malformed_input_gets_errors_and_the_connection_stays_up(server: Server) -> None:
    c = await AhpClient.open(server.url)
    await c.initialize(["0.7.0"])
    await c.ws.send("{not json")
    await c.ws.send(json.dumps([1, 2]))
    # An id that is not a string, number or null is refused, not echoed back.
    for bad_id in ([1], {"a": 1}, True):
        await c.ws.send(json.dumps({"jsonrpc": "2.0", "id": bad_id, "method": "ping"}))
    async with asyncio.timeout(10):
        while True:
            if len(c.errors) >= 5:  # one answer per bad frame
                break
            await asyncio.sleep(0.01)
    assert [e["error"]["code"] for e in c.errors] == [-32700] + [-32600] * 4
    assert all(e["id"] is None for e in c.errors)
    with pytest.raises(RpcFailure) as err:
        await c.request("noSuchMethod")
    assert err.value.code == -32601
    for params in ({"channel": 42}, {"channel": "ahp-chat:/not-a-uuid"}, {"channel": "x:/y"}):
        with pytest.raises(RpcFailure) as err:
            await c.request("subscribe", params)
        assert err.value.code == -32602
    with pytest.raises(RpcFailure) as err:
        await c.request("subscribe", {"channel": f"ahp-chat:/{uuid.uuid4()}"})
    assert err.value.code == -32008
    with pytest.raises(RpcFailure) as err:
        await c.request(
            "createChat",
            {"channel": f"ahp-session:/{uuid.uuid4()}", "chat": f"ahp-chat:/{uuid.uuid4()}"},
        )
    assert err.value.code == -32602
    # A flood: the excess is refused with -32000, the connection stays up.
    results = await asyncio.gather(
        *(c.request("ping", {"channel": "ahp-root://"}) for _ in range(100)),
        return_exceptions=True,
    )
    refused = [r for r in results if isinstance(r, RpcFailure)]
    assert refused and all(r.code == -32000 for r in refused)
    assert any(r == {} for r in results)
    await asyncio.sleep(1.2)
    assert await c.request("ping", {"channel": "ahp-root://"}) == {}
    assert not c.invalid
    # An oversized frame closes this connection with 1009; the server stays up.
    await c.ws.send(
        json.dumps({"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": "y" * 8000}})
    )
    await asyncio.wait_for(c.task, 5)
    assert c.close_code == 1009
    d = await AhpClient.open(server.url)
    await d.initialize()
    assert await d.request("ping", {"channel": "ahp-root://"}) == {}
    await d.close()


async def test_session_lifecycle_checkout_errors_and_cursors(server: Server) -> None:
    c = await AhpClient.open(server.url)
    await c.initialize(["1.0.0"])
    sid = uuid.uuid4()
    session, chat = f"ahp-session:/{sid}", f"ahp-chat:/{sid}"
    await c.request("createSession", {"channel": session})
    with pytest.raises(RpcFailure) as err:
        await c.request("createSession", {"channel": session})
    assert err.value.code == -32003
    await c.request("subscribe", {"channel": chat})
    await c.request("subscribe", {"channel": session})

    async def send(text: str, seq: int) -> str:
        await c.notify(
            "dispatchAction",
            {
                "channel": chat,
                "clientSeq": seq,
                "action": {
                    "type": "chat/turnStarted",
                    "turnId": f"c{seq}",
                    "startedAt": "2024-01-01T00:00:00Z",
                    "message": {"text": text, "origin": {"kind": "user"}},
                },
            },
        )
        env = await c.wait_for(lambda e: e.get("origin", {}).get("clientSeq") == seq)
        return str(env["action"]["turnId"]) if "rejectionReason" not in env else ""

    t1 = await send("objective: one", 1)
    await c.wait_for(
        lambda e: e["action"]["type"] == "chat/turnComplete" and e["action"]["turnId"] == t1
    )
    slow = await send("wait: 5", 2)
    # A turn is running: a second send is echoed back rejected, checkout is -32004.
    await send("again", 3)
    rejected = await c.wait_for(lambda e: e.get("origin", {}).get("clientSeq") == 3)
    assert rejected["rejectionReason"]
    with pytest.raises(RpcFailure) as err:
        await c.request("checkoutChatHistory", {"channel": chat, "turnId": t1})
    assert err.value.code == -32004
    await c.notify(
        "dispatchAction",
        {
            "channel": chat,
            "clientSeq": 4,
            "action": {"type": "chat/turnCancelled", "turnId": slow, "duration": 0},
        },
    )
    await c.wait_for(lambda e: e["action"]["type"] == "chat/turnCancelled" and "origin" not in e)
    # Stale expectation: -32011; unknown turn: -32008.
    with pytest.raises(RpcFailure) as err:
        await c.request(
            "checkoutChatHistory", {"channel": chat, "turnId": t1, "expectedHeadTurnId": None}
        )
    assert err.value.code == -32011
    with pytest.raises(RpcFailure) as err:
        await c.request("checkoutChatHistory", {"channel": chat, "turnId": "th_" + "0" * 32 + ":1"})
    assert err.value.code == -32008
    await c.request(
        "checkoutChatHistory", {"channel": chat, "turnId": t1, "expectedHeadTurnId": slow}
    )
    # Cursors: a forged one is -32602; combining cursor and parentTurnId too.
    with pytest.raises(RpcFailure) as err:
        await c.request("fetchTurns", {"channel": chat, "cursor": "bm90LWEtY3Vyc29y"})
    assert err.value.code == -32602
    with pytest.raises(RpcFailure) as err:
        await c.request("fetchTurns", {"channel": chat, "cursor": "x", "parentTurnId": None})
    assert err.value.code == -32602
    # A fork through createChat; then dispose the session.
    fork = uuid.uuid4()
    await c.request(
        "createChat",
        {
            "channel": session,
            "chat": f"ahp-chat:/{fork}",
            "source": {"kind": "fork", "chat": chat, "turnId": t1},
        },
    )
    snap = (await c.request("subscribe", {"channel": f"ahp-chat:/{fork}"}))["snapshot"]["state"]
    assert snap["origin"] == {"kind": "fork", "chat": chat, "turnId": t1}
    listed = await c.request("subscribe", {"channel": session})
    assert f"ahp-chat:/{fork}" in [x["resource"] for x in listed["snapshot"]["state"]["chats"]]
    await c.request("disposeSession", {"channel": session})
    assert any(n["method"] == "root/sessionRemoved" for n in c.notifications)
    with pytest.raises(RpcFailure) as err:
        await c.request("subscribe", {"channel": chat})
    assert err.value.code == -32008
    # Reconnect: replay from the log, the disposed chat is missing.
    r = await AhpClient.open(server.url)
    result = await r.request(
        "reconnect",
        {
            "channel": "ahp-root://",
            "clientId": "test",
            "lastSeenServerSeq": 0,
            "subscriptions": [chat, f"ahp-chat:/{fork}"],
        },
    )
    assert result["type"] == "replay" and result["missing"] == [chat]
    assert not c.invalid and not r.invalid
    await r.close()
    await c.close()


async def test_token_mode_refuses_a_handshake_without_a_token(server_env: dict[str, str]) -> None:
    env = {**server_env, "HAICO_AUTH": "token"}
    srv = Server(env)
    await srv.start()
    try:
        # A user made on the served database (`haico users create` has its own tests).
        settings = Settings(
            database_url=env.get("HAICO_DATABASE_URL"), data_dir=Path(env["HAICO_DATA_DIR"])
        )
        db = Database(settings.sql_url)
        try:
            _, token = await users.create(db, name="ana")
        finally:
            await db.dispose()
        with pytest.raises(InvalidStatus):
            await AhpClient.open(srv.url)
        with pytest.raises((InvalidStatus, ConnectionClosed)):
            await AhpClient.open(srv.url, token="wrong")
        c = await AhpClient.open(srv.url, token=token)
        assert (await c.initialize())["protocolVersion"] == "1.0.0"
        await c.close()
    finally:
        srv.stop()
