"""The issue's scripted session over real WebSockets: initialize, list sessions,
subscribe, two turns, checkout of the first, a send that makes a branch, the children
of the branch point — with a second client on a second server process converging on
every step. Every message either client receives is validated against the schemas of
the version its connection agreed (1.0.0 for one, 0.7.0 for the other)."""

from __future__ import annotations

import uuid
from typing import Any

from haico.ahp.reducer import reduce_chat, selected_path
from tests.ahp.wire import AhpClient
from tests.server import Server

Json = dict[str, Any]


def ended(turn_id: str) -> Any:
    return lambda e: (
        e["action"]["type"] in ("chat/turnComplete", "chat/error")
        and e["action"].get("turnId") == turn_id
    )


class Follower:
    """A client whose chat state is its snapshot plus every action it received."""

    def __init__(self, client: AhpClient, channel: str) -> None:
        self.client, self.channel = client, channel
        self.state: Json = {}
        self.applied = 0

    async def subscribe(self) -> None:
        result = await self.client.request("subscribe", {"channel": self.channel})
        self.state = result["snapshot"]["state"]
        self.applied = len(self.client.actions)

    def catch_up(self) -> Json:
        for envelope in self.client.actions[self.applied :]:
            if envelope["channel"] == self.channel and "rejectionReason" not in envelope:
                self.state = reduce_chat(self.state, envelope["action"])
        self.applied = len(self.client.actions)
        return self.state


def comparable(state: Json) -> Json:
    """What must agree between two views of a chat: the selected path's turns, the head
    and the active turn (modifiedAt and status are each client's own bookkeeping)."""
    path = selected_path(state)
    turns = state["turns"]
    return {
        "head": state.get("headTurnId"),
        "path": [
            {k: turns[t].get(k) for k in ("id", "parentTurnId", "state", "message")}
            | {"text": "".join(p.get("content", "") for p in turns[t]["responseParts"])}
            for t in path
        ],
        "active": (state.get("activeTurn") or {}).get("id"),
    }


async def test_scripted_session_converges_across_two_server_processes(
    server_env: dict[str, str],
) -> None:
    a, b = Server(server_env), Server(server_env)
    await a.start()
    await b.start()
    one = await AhpClient.open(a.url)
    two = await AhpClient.open(b.url)
    try:
        init = await one.initialize(["1.0.0"])
        assert init["protocolVersion"] == "1.0.0"
        agent = init["snapshots"][0]["state"]["agents"][0]
        assert agent["capabilities"]["history"] == {"retainsBranches": True}
        assert agent["capabilities"]["multipleChats"]["fork"] is True
        init2 = await two.initialize(["0.7.3"])
        assert init2["protocolVersion"] == "0.7.3"

        # A session with a client-chosen id; the second client hears about it.
        sid = uuid.uuid4()
        session = f"ahp-session:/{sid}"
        chat = f"ahp-chat:/{sid}"
        await one.request("createSession", {"channel": session, "provider": "haico"})
        listed = await one.request("listSessions", {"channel": "ahp-root://"})
        assert session in [s["resource"] for s in listed["items"]]
        listed2 = await two.request("listSessions", {"channel": "ahp-root://"})
        assert session in [s["resource"] for s in listed2["items"]]
        assert any(
            n["method"] == "root/sessionAdded" and n["params"]["summary"]["resource"] == session
            for n in one.notifications
        )

        f1, f2 = Follower(one, chat), Follower(two, chat)
        await f1.subscribe()
        await f2.subscribe()
        assert f1.state["turns"] == {} and "headTurnId" not in f1.state

        async def converge() -> None:
            """Both reduced states equal each other and a fresh snapshot on each server."""
            seq = max(e["serverSeq"] for e in one.actions if e["channel"] == chat)
            await two.wait_for(lambda e: e["channel"] == chat and e["serverSeq"] >= seq)
            fresh1 = (await one.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            fresh2 = (await two.request("subscribe", {"channel": chat}))["snapshot"]["state"]
            want = comparable(fresh1)
            assert comparable(f1.catch_up()) == want
            assert comparable(f2.catch_up()) == want
            assert comparable(fresh2) == want

        async def send(text: str, seq: int) -> str:
            await one.notify(
                "dispatchAction",
                {
                    "channel": chat,
                    "clientSeq": seq,
                    "action": {
                        "type": "chat/turnStarted",
                        "turnId": f"client-{seq}",
                        "startedAt": "2024-01-01T00:00:00Z",
                        "message": {"text": text, "origin": {"kind": "user"}},
                    },
                },
            )
            started = await one.wait_for(
                lambda e: (
                    e["action"]["type"] == "chat/turnStarted"
                    and e.get("origin", {}).get("clientSeq") == seq
                )
            )
            assert "rejectionReason" not in started
            turn_id: str = started["action"]["turnId"]
            await one.wait_for(ended(turn_id))
            return turn_id

        t1 = await send("objective: plan the trip", 1)
        await converge()
        t2 = await send("todo: book flights", 2)
        assert f1.catch_up()["turns"][t2]["parentTurnId"] == t1
        await converge()

        await one.request("checkoutChatHistory", {"channel": chat, "turnId": t1})
        assert f1.catch_up()["headTurnId"] == t1
        await converge()

        t3 = await send("todo: take the train instead", 3)
        state = f1.catch_up()
        assert state["turns"][t3]["parentTurnId"] == t1  # a branch at t1
        assert t2 in state["turns"]  # the other future is retained
        await converge()

        # The children of the branch point, from the second server.
        before = len(two.actions)
        result = await two.request("fetchTurns", {"channel": chat, "parentTurnId": t1})
        assert "nextCursor" not in result
        loaded = [e for e in two.actions[before:] if e["action"]["type"] == "chat/turnsLoaded"]
        assert set(loaded[-1]["action"]["turns"]) == {t2, t3}
        roots = await two.request("fetchTurns", {"channel": chat, "parentTurnId": None})
        assert roots == {}
        assert set(two.actions[-1]["action"]["turns"]) == {t1}
        await converge()
    finally:
        await one.close()
        await two.close()
        a.stop()
        b.stop()
