"""The AHP host's per-connection limits over a real WebSocket, on both databases: the
subscription limit, and a chat snapshot that reads only the action-log entries of its
own window."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from httpx import AsyncClient

from haico.events import log as action_log
from haico.services.turns import views as turn_views
from tests.ahp.live import chat_of, connected
from tests.ahp.wire import RpcFailure
from tests.helpers import db_of
from tests.history_helpers import live_server, new_thread, turn_ok

Json = dict[str, Any]
FLOOD = 80


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"ahp_max_subscriptions": 3}


async def test_the_subscription_limit_is_per_connection(app: FastAPI, client: AsyncClient) -> None:
    chats = [chat_of(await new_thread(client)) for _ in range(3)]
    async with live_server(app) as base:
        c = await connected(base)  # the root counts as one of the 3
        for chat in chats[:2]:
            await c.request("subscribe", {"channel": chat})
        with pytest.raises(RpcFailure) as err:
            await c.request("subscribe", {"channel": chats[2]})
        assert err.value.code == -32602 and "at most 3" in str(err.value.message)
        # Subscribing again to a channel already held is not a new subscription.
        await c.request("subscribe", {"channel": chats[0]})
        await c.request("unsubscribe", {"channel": chats[0]})
        await c.request("subscribe", {"channel": chats[2]})
        # Another connection has its own budget.
        d = await connected(base, chats[0], chats[1])
        assert await d.request("ping", {}) == {}
        assert not c.invalid and not d.invalid
        await c.close()
        await d.close()


async def test_a_chat_snapshot_reads_only_its_window_of_the_log(
    app: FastAPI, client: AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = db_of(app)
    user = app.state.local_user
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: the old turn")
    # A long history of logged activity before the window (a long-streamed old turn).
    async with db.transaction() as s:
        filler = [
            {"type": "chat/delta", "turnId": f"{tid}:99", "partId": "p", "content": "x"}
        ] * 3000
        await action_log.append_chat(s, tid, *filler)
    await turn_ok(client, tid, "objective: recent one")
    await turn_ok(client, tid, "objective: recent two")
    read: list[int] = []
    original = action_log.read_before

    async def counting(*args: Any, **kwargs: Any) -> Any:
        page = await original(*args, **kwargs)
        read.append(len(page))
        return page

    monkeypatch.setattr(action_log, "read_before", counting)
    window = await turn_views.chat_material(db, principal=user, root_thread_id=tid, limit=2)
    assert [t.user_message for t in window.path.turns] == [
        "objective: recent one",
        "objective: recent two",
    ]
    assert window.path.more
    assert all(window.path.actions[t.id] for t in window.path.turns)
    assert sum(read) <= 500  # one page: the filler before the window is never read
    read.clear()
    whole = await turn_views.chat_material(db, principal=user, root_thread_id=tid, limit=3)
    first = whole.path.turns[0]
    kinds = [a["type"] for a in whole.path.actions[first.id]]
    assert kinds[0] == "chat/turnStarted" and kinds[-1] == "chat/turnComplete"
    assert sum(read) > 3000  # reaching the old turn means reading past the filler
