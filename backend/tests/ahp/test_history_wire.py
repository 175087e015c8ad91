"""The history operations across faces, over a real WebSocket on both databases:
`reconnect` after the log window, `chat/turnsPruned` for a linear host and for
retention, a checkout made on one face seen on the other, and sessions created and
disposed over AHP seen by another AHP connection and by REST."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

import pytest
from fastapi import FastAPI
from httpx import AsyncClient

from haico.ahp.reducer import reduce_chat
from haico.domain import now
from haico.events import log as action_log
from haico.wiring import janitor
from tests.ahp.live import chat_of, connected, notified, send, session_of, until
from tests.helpers import db_of
from tests.history_helpers import (
    checkout,
    has_action,
    live_server,
    new_thread,
    read_events,
    thread_with_turns,
    turn_ok,
)

Json = dict[str, Any]


def kind(name: str) -> Any:
    return lambda e: e["action"]["type"] == name


async def test_reconnect_older_than_the_log_window_gets_fresh_snapshots(
    app: FastAPI, client: AsyncClient
) -> None:
    tid = await thread_with_turns(client, 2)
    chat = chat_of(tid)
    async with live_server(app) as base:
        c = await connected(base)
        seen = int((await c.request("subscribe", {"channel": chat}))["snapshot"]["fromSeq"])
        await c.close()
        # While it is away: a turn, and the log window moves past what it saw.
        await turn_ok(client, tid, "objective: while away")
        async with db_of(app).transaction() as s:
            dropped = await action_log.prune_before(s, now() + timedelta(days=1))
        assert dropped > 0
        await turn_ok(client, tid, "objective: after the prune")
        again = await connected(base)
        result = await again.request(
            "reconnect",
            {
                "clientId": "test",
                "lastSeenServerSeq": seen,
                "subscriptions": [chat],
            },
        )
        assert result["type"] == "snapshot"
        (snap,) = result["snapshots"]
        assert snap["resource"] == chat
        turns = snap["state"]["turns"]
        assert snap["state"]["headTurnId"] == f"{tid}:4"
        assert {f"{tid}:{k}" for k in range(1, 5)} <= set(turns)
        # Live again from the snapshot on.
        await turn_ok(client, tid, "objective: live")
        await again.wait_for(
            lambda e: (
                e["action"]["type"] == "chat/turnComplete" and e["serverSeq"] > snap["fromSeq"]
            )
        )
        assert not again.invalid
        await again.close()


async def test_a_checkout_on_either_face_is_seen_on_the_other(
    app: FastAPI, client: AsyncClient
) -> None:
    tid = await thread_with_turns(client, 2)
    chat = chat_of(tid)
    async with live_server(app) as base:
        c = await connected(base, chat)
        # REST checkout -> the AHP subscriber.
        r = await checkout(client, tid, f"{tid}:1")
        assert r.status_code == 200, r.text
        seen = await c.wait_for(kind("chat/historyCheckedOut"))
        assert seen["channel"] == chat and seen["action"].get("headTurnId") == f"{tid}:1"
        # AHP checkout -> a REST /events follower.
        after = int(seen["serverSeq"])
        result = await c.request(
            "checkoutChatHistory",
            {"channel": chat, "turnId": f"{tid}:2", "expectedHeadTurnId": f"{tid}:1"},
        )
        assert result is not None
        events = await read_events(
            base,
            tid,
            after=after,
            until=has_action("chat/historyCheckedOut", headTurnId=f"{tid}:2"),
        )
        assert events[-1]["serverSeq"] > after
        history = (await client.get(f"/api/conversations/{tid}/history")).json()
        assert history["head_turn_id"] == f"{tid}:2"
        assert not c.invalid
        await c.close()


async def test_sessions_made_and_disposed_over_ahp_reach_ahp_and_rest(
    app: FastAPI, client: AsyncClient
) -> None:
    async with live_server(app) as base:
        maker = await connected(base)
        watcher = await connected(base)
        sid = uuid.uuid4()
        session, tid = f"ahp-session:/{sid}", f"th_{sid.hex}"
        await maker.request("createSession", {"channel": session})
        added = await until(
            notified(watcher, "root/sessionAdded", lambda p: p["summary"]["resource"] == session),
            what="root/sessionAdded on another connection",
        )
        assert added["params"]["summary"]["chats"][0]["resource"] == f"ahp-chat:/{sid}"
        listed = (await client.get("/api/conversations")).json()
        assert tid in [c["thread_id"] for c in listed]
        await maker.request("disposeSession", {"channel": session})
        await until(
            notified(watcher, "root/sessionRemoved", lambda p: p["session"] == session),
            what="root/sessionRemoved on another connection",
        )
        listed = (await client.get("/api/conversations")).json()
        assert tid not in [c["thread_id"] for c in listed]
        assert (await client.get(f"/api/conversations/{tid}")).status_code == 404
        assert not maker.invalid and not watcher.invalid
        await maker.close()
        await watcher.close()


class TestLinearHost:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"history_retains_branches": False}

    async def test_continuing_from_an_earlier_turn_prunes_on_the_wire(
        self, app: FastAPI, client: AsyncClient
    ) -> None:
        tid = await new_thread(client)
        chat = chat_of(tid)
        async with live_server(app) as base:
            c = await connected(base, chat)
            other = await connected(base)
            state = (await other.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            first = await send(c, chat, "objective: one", 1)
            await send(c, chat, "objective: two", 2)
            last = await send(c, chat, "objective: three", 3)
            await c.request(
                "checkoutChatHistory",
                {"channel": chat, "turnId": first, "expectedHeadTurnId": last},
            )
            new = await send(c, chat, "objective: instead", 4)
            pruned = await other.wait_for(kind("chat/turnsPruned"))
            assert sorted(pruned["action"]["turnIds"]) == [f"{tid}:2", f"{tid}:3"]
            await other.wait_for(
                lambda e: (
                    e["action"]["type"] == "chat/turnComplete" and e["action"]["turnId"] == new
                )
            )
            for envelope in other.actions:
                if envelope["channel"] == chat:
                    state = reduce_chat(state, envelope["action"])
            fresh = (await other.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            assert set(state["turns"]) == set(fresh["turns"]) == {first, new}
            assert state["headTurnId"] == fresh["headTurnId"] == new
            assert not c.invalid and not other.invalid
            await c.close()
            await other.close()


class TestRetention:
    @pytest.fixture
    def settings_overrides(self) -> dict[str, Any]:
        return {"retention_max_branches": 0}

    async def test_the_janitor_prunes_off_path_branches_on_the_wire(
        self, app: FastAPI, client: AsyncClient
    ) -> None:
        tid = await thread_with_turns(client, 3)
        b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 2})).json()
        await turn_ok(client, b["thread_id"], "objective: side")
        r = await checkout(client, tid, f"{tid}:3")
        assert r.status_code == 200, r.text
        chat = chat_of(tid)
        async with live_server(app) as base:
            c = await connected(base, chat, session_of(tid))
            report = await janitor.run_once(
                db_of(app), app.state.runtime, max_age_seconds=600, settings=app.state.settings
            )
            assert report.pruned_turn_ids[tid] == [f"{b['thread_id']}:3"]
            pruned = await c.wait_for(kind("chat/turnsPruned"))
            assert pruned["channel"] == chat
            assert pruned["action"]["turnIds"] == [f"{b['thread_id']}:3"]
            fresh = (await c.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            assert f"{b['thread_id']}:3" not in fresh["turns"]
            assert not c.invalid
            await c.close()
