"""A lone surrogate in a dispatched action (a turn's text, a note) is refused over
AHP like any other invalid action: echoed to its sender with `rejectionReason`,
nothing written, the connection still serving; on both databases."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi import FastAPI
from httpx import AsyncClient

from tests.ahp.live import chat_of, connected, session_of
from tests.ahp.test_annotation_writes import dispatch, family_notes, new_annotation
from tests.ahp.wire import RpcFailure
from tests.history_helpers import history, live_server, new_thread, turn_ok

LONE = "\ud800 zq-marker"


def _turn(text: str, seq: int) -> dict[str, Any]:
    return {
        "type": "chat/turnStarted",
        "turnId": f"client-{seq}",
        "startedAt": "2024-01-01T00:00:00Z",
        "message": {"text": text, "origin": {"kind": "user"}},
    }


async def test_a_lone_surrogate_is_a_rejection_not_a_failure(
    app: FastAPI, client: AsyncClient
) -> None:
    tid = await new_thread(client)
    await turn_ok(client, tid, "objective: one")
    notes = session_of(tid) + "/annotations"
    async with live_server(app) as base:
        c = await connected(base, chat_of(tid), notes)
        for seq, (channel, action) in enumerate(
            [(chat_of(tid), _turn(LONE, 1)), (notes, new_annotation(f"{tid}:1", LONE, []))],
            start=1,
        ):
            answer = await dispatch(c, channel, action, seq)
            assert "not valid Unicode" in answer["rejectionReason"], answer
            assert answer["action"] == action  # echoed as sent
        # A request whose params hold one is an invalid-params error, not a failure.
        with pytest.raises(RpcFailure) as err:
            await c.request("subscribe", {"channel": chat_of(tid) + LONE})
        assert err.value.code == -32602 and "zq-marker" not in str(err.value.message)
        assert await c.request("ping", {}) == {}
        assert (await history(client, tid))["active_turn"] is None
        assert (await client.get(f"/api/conversations/{tid}")).json()["turn_index"] == 1
        assert await family_notes(client, tid) == []
        await c.close()
