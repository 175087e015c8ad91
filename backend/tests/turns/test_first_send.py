"""A conversation created by its first send (`POST …/{id}/turns?create=true`), on both
databases: the thread and its first turn are committed together, so a send refused
or failed before its turn started leaves no empty conversation in the list."""

from __future__ import annotations

import httpx
from fastapi import FastAPI

from haico.db.faults import Step
from haico.domain import new_thread_id
from tests.helpers import (
    armed_faults,
    db_of,
    listed_conversations,
    local_and_strangers_thread,
    seed_conversation,
)
from tests.sse_client import send_turn

API = "/api/conversations"


async def test_the_first_send_creates_the_conversation(client: httpx.AsyncClient) -> None:
    tid = new_thread_id()
    assert (await send_turn(client, tid, "hello"))[0] == 404  # no create: unknown is 404
    status, events, _ = await send_turn(client, tid, "Why do bridges sway?", create="true")
    assert status == 200 and events[0][0] == "turn_started" and events[-1][0] == "turn_completed"
    listed = (await listed_conversations(client))[tid]
    assert listed["turn_index"] == 1 and listed["root_thread_id"] == tid
    assert listed["title"] == "Why do bridges sway?"
    # the conversation exists now: the flag changes nothing on the next send
    status, events, _ = await send_turn(client, tid, "and towers?", create="true")
    assert status == 200 and events[-1][0] == "turn_completed"
    assert (await listed_conversations(client))[tid]["turn_index"] == 2


async def test_a_failed_opening_leaves_no_empty_conversation(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    tid = new_thread_id()
    with armed_faults(db_of(app), "fail") as armed:
        armed["fail"] = Step.OPEN
        status, events, _ = await send_turn(client, tid, "first words", create="true")
    assert Step.OPEN in armed["seen"]
    assert status == 500 and events == []
    # Nothing was created: not listed, not readable, and the id is still free.
    assert tid not in await listed_conversations(client)
    assert (await client.get(f"{API}/{tid}")).status_code == 404
    status, events, _ = await send_turn(client, tid, "first words", create="true")
    assert status == 200 and events[-1][0] == "turn_completed"
    assert (await listed_conversations(client))[tid]["turn_index"] == 1


async def test_a_refused_send_creates_nothing(app: FastAPI, client: httpx.AsyncClient) -> None:
    tid = new_thread_id()
    too_long = "x" * (db_of(app).limits.message_chars + 1)
    status, _, body = await send_turn(client, tid, too_long, create="true")
    assert status in (413, 422), body
    assert tid not in await listed_conversations(client)
    assert (await client.get(f"{API}/{tid}")).status_code == 404


async def test_create_never_takes_another_users_or_a_deleted_thread(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    foreign = await local_and_strangers_thread(app)
    status, _, _ = await send_turn(client, foreign.thread_id, "mine now?", create="true")
    assert status == 403
    mine = await seed_conversation(app, app.state.local_user)
    assert (await client.delete(f"{API}/{mine.thread_id}")).status_code == 204
    status, _, _ = await send_turn(client, mine.thread_id, "back?", create="true")
    assert status == 404
