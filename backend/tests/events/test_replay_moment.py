"""A replay and the position a follower goes on live from are read at one moment
(`log_replay.replay_to_now`, what an AHP `reconnect` answers): an action appended
while the replay is read is either in it or after its position, never in neither."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.events import log as action_log
from haico.services.turns import log_replay
from tests.history_helpers import new_thread

API = "/api/conversations"


async def test_an_append_during_the_replay_is_in_it_or_after_its_position(
    app: FastAPI, client: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (from the log's position before the family: the database is shared by the suite's
    # tests, whose log may have been trimmed below that)
    start = await log_replay.log_position(app.state.db)
    tid = await new_thread(client)
    r = await client.put(f"{API}/{tid}/objective", json={"text": "before"})
    assert r.status_code == 200, r.text
    read_after = action_log.read_after
    edits: list[asyncio.Task[httpx.Response]] = []

    async def with_an_edit_meanwhile(*args: Any, **kwargs: Any) -> Any:
        # another client's edit lands while the replay is being read
        if not edits:
            put = client.put(f"{API}/{tid}/objective", json={"text": "meanwhile"})
            edits.append(asyncio.create_task(put))
            await asyncio.sleep(0.3)
        return await read_after(*args, **kwargs)

    monkeypatch.setattr(action_log, "read_after", with_an_edit_meanwhile)
    found = await log_replay.replay_to_now(app.state.db, after=start, root_thread_ids={tid})
    monkeypatch.setattr(action_log, "read_after", read_after)
    assert found is not None
    entries, position = found
    assert (await edits[0]).status_code == 200
    replayed = {seq for seq, _, _ in entries}
    logged = await log_replay.replay(app.state.db, after=start, root_thread_ids={tid})
    assert logged is not None
    late = [seq for seq, _, action in logged if action.get("item") == {"text": "meanwhile"}]
    assert len(late) == 1
    # every action of the family up to the position is in the replay; the edit made
    # meanwhile is in it or comes after the position (the live pump delivers it)
    assert {seq for seq, _, _ in logged if seq <= position} == replayed
    assert late[0] in replayed or late[0] > position
