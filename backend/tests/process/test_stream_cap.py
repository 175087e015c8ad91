"""`HAICO_MAX_STREAMS_PER_USER`: event streams and AHP sockets of one user, counted
together, over a real socket. One more → 429 `too_many_streams` (an AHP handshake is
refused with 429); other users are unaffected; a closed stream frees its slot."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from websockets.exceptions import InvalidStatus

from tests.ahp.wire import AhpClient
from tests.history_helpers import live_server
from tests.share_helpers import new_family

CAP = 3


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token", "max_streams_per_user": CAP}


@contextlib.asynccontextmanager
async def follow(
    http: httpx.AsyncClient, tid: str, headers: dict[str, str]
) -> AsyncIterator[httpx.Response]:
    async with http.stream("GET", f"/api/conversations/{tid}/events", headers=headers) as r:
        yield r


async def status_of_one_more(http: httpx.AsyncClient, tid: str, headers: dict[str, str]) -> int:
    async with follow(http, tid, headers) as r:
        if r.status_code != 200:
            await r.aread()
            assert r.json()["code"] == "too_many_streams", r.text
        return r.status_code


async def test_streams_and_sockets_share_one_cap(app: FastAPI) -> None:
    fam = await new_family(app)
    other = await new_family(app)
    other_tid, other_h = other.tid, other.owner_h
    token = fam.owner_h["Authorization"].removeprefix("Bearer ")
    async with live_server(app) as base, httpx.AsyncClient(base_url=base, timeout=10) as http:
        async with contextlib.AsyncExitStack() as held:
            for _ in range(CAP - 1):
                r = await held.enter_async_context(follow(http, fam.tid, fam.owner_h))
                assert r.status_code == 200
            socket = await AhpClient.open(base, token=token)
            # The cap is reached: one more stream, and one more socket, are refused.
            assert await status_of_one_more(http, fam.tid, fam.owner_h) == 429
            with pytest.raises(InvalidStatus) as refused:
                await AhpClient.open(base, token=token)
            assert refused.value.response.status_code == 429
            # Another user is unaffected.
            assert await status_of_one_more(http, other_tid, other_h) == 200
            # A closed socket frees its slot (once the server has seen it go).
            await socket.ws.close()
            deadline = time.monotonic() + 10
            while await status_of_one_more(http, fam.tid, fam.owner_h) != 200:
                assert time.monotonic() < deadline, "the closed socket's slot never came back"
                await asyncio.sleep(0.1)
        # Every stream closed: the whole cap is free again.
        deadline = time.monotonic() + 10
        while True:
            async with contextlib.AsyncExitStack() as again:
                codes = [
                    (
                        await again.enter_async_context(follow(http, fam.tid, fam.owner_h))
                    ).status_code
                    for _ in range(CAP)
                ]
            if codes == [200] * CAP:
                break
            assert time.monotonic() < deadline, codes
            await asyncio.sleep(0.1)
