"""Blind coding on the live paths, on both databases: a coder following the family's
event stream, its AHP annotations channel or its study's event stream receives its
own coding actions and none of another coder's until the codings are revealed, and
every one after; the family's (or the study's) owner receives them all throughout."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from tests.ahp.live import session_of
from tests.ahp.wire import AhpClient
from tests.coding.helpers import API, code, family, ok, send
from tests.history_helpers import live_server
from tests.share_helpers import bearer, new_user

Json = dict[str, Any]


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


class Watch:
    """What one follower received: the coding actions, as (`set`|`removed`, coding id)."""

    def __init__(self) -> None:
        self.actions: list[Json] = []
        self.arrived = asyncio.Event()

    def add(self, action: Json) -> None:
        self.actions.append(action)
        self.arrived.set()

    def codings(self) -> list[tuple[str, int]]:
        out = []
        for a in self.actions:
            if a.get("type") == "annotations/set":
                ident = str(a["annotation"]["id"])
                kind = "set"
            elif a.get("type") == "annotations/removed":
                ident, kind = str(a["annotationId"]), "removed"
            else:
                continue
            if ident.startswith("coding-"):
                out.append((kind, int(ident.removeprefix("coding-"))))
        return out

    async def until(self, *wanted: tuple[str, int], within: float = 20) -> None:
        await self.until_action(lambda w: set(wanted) <= set(w.codings()), within=within)

    async def until_action(self, done: Callable[[Watch], bool], within: float = 20) -> None:
        """Wait until what arrived satisfies `done`."""
        deadline = time.monotonic() + within
        while not done(self):
            left = deadline - time.monotonic()
            assert left > 0, f"never satisfied; got {self.actions}"
            self.arrived.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.arrived.wait(), timeout=left)


@contextlib.asynccontextmanager
async def sse(base: str, path: str, headers: dict[str, str]) -> AsyncIterator[Watch]:
    """Follow the SSE stream at `path` (from the start of the log) while the block runs."""
    watch, ready = Watch(), asyncio.Event()

    async def run() -> None:
        async with (
            httpx.AsyncClient(base_url=base, timeout=None, headers=headers) as c,
            c.stream("GET", path, params={"after": 0}) as r,
        ):
            assert r.status_code == 200, await r.aread()
            ready.set()
            buf = ""
            async for chunk in r.aiter_text():
                buf += chunk
                while "\n\n" in buf:
                    block, buf = buf.split("\n\n", 1)
                    data = [ln[5:].strip() for ln in block.splitlines() if ln.startswith("data:")]
                    if data:
                        watch.add(json.loads("\n".join(data))["action"])

    task = asyncio.create_task(run())
    await asyncio.wait_for(ready.wait(), timeout=20)
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task


@contextlib.asynccontextmanager
async def ahp(base: str, headers: dict[str, str], tid: str) -> AsyncIterator[Watch]:
    """Subscribe to the family's annotations channel over AHP while the block runs."""
    client = await AhpClient.open(base, token=headers["Authorization"].removeprefix("Bearer "))
    await client.initialize(["1.0.0"])
    await client.request("subscribe", {"channel": session_of(tid) + "/annotations"})
    watch = Watch()

    async def run() -> None:
        seen = 0
        while True:
            for envelope in client.actions[seen:]:
                watch.add(envelope["action"])
            seen = len(client.actions)
            await asyncio.sleep(0.02)

    task = asyncio.create_task(run())
    try:
        yield watch
    finally:
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
        assert not client.invalid, client.invalid
        await client.close()


Follow = Callable[[dict[str, str]], contextlib.AbstractAsyncContextManager[Watch]]


async def blind_then_revealed(
    client: httpx.AsyncClient,
    follow: Follow,
    *,
    tid: str,
    codes: tuple[int, int],
    a: dict[str, str],
    b: dict[str, str],
    owner: dict[str, str],
    reveal: Callable[[], Awaitable[None]],
) -> None:
    """Coder A codes (and deletes a coding) while B and the owner follow; B receives
    its own coding and none of A's until the reveal, every one after; the owner all."""
    first, second = codes
    async with follow(b) as bw, follow(owner) as ow:
        gone = (await code(client, tid, 1, first, a))["id"]
        await ok(await client.delete(f"/api/codings/{gone}", headers=a), 204)
        kept = (await code(client, tid, 2, second, a))["id"]
        mine = (await code(client, tid, 2, first, b))["id"]
        # in serverSeq order: B's own coding comes after every action of A's above
        await bw.until(("set", mine))
        assert bw.codings() == [("set", mine)]
        await ow.until(("set", gone), ("removed", gone), ("set", kept), ("set", mine))

        await reveal()
        later = (await code(client, tid, 3, second, a))["id"]
        await ok(await client.delete(f"/api/codings/{kept}", headers=a), 204)
        await bw.until(("set", later), ("removed", kept))
        await ow.until(("set", later), ("removed", kept))
        assert ("set", gone) not in bw.codings()


async def shared_family(app: FastAPI, client: httpx.AsyncClient) -> Any:
    s = await family(app, client, coders=("commenter", "commenter"))
    (_, ah), (_, bh) = s.coders["commenter0"], s.coders["commenter1"]

    async def reveal() -> None:
        r = await client.patch(f"{API}/{s.tid}", json={"reveal_codings": True}, headers=s.owner_h)
        await ok(r)

    return s, ah, bh, reveal


async def test_the_familys_event_stream_is_blind_until_the_reveal(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s, ah, bh, reveal = await shared_family(app, client)
    async with live_server(app) as base:
        await blind_then_revealed(
            client,
            lambda h: sse(base, f"{API}/{s.tid}/events", h),
            tid=s.tid,
            codes=(s.code("planning"), s.code("delegation")),
            a=ah,
            b=bh,
            owner=s.owner_h,
            reveal=reveal,
        )


async def test_live_ahp_annotations_are_blind_until_the_reveal(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    s, ah, bh, reveal = await shared_family(app, client)
    async with live_server(app) as base:
        await blind_then_revealed(
            client,
            lambda h: ahp(base, h, s.tid),
            tid=s.tid,
            codes=(s.code("planning"), s.code("delegation")),
            a=ah,
            b=bh,
            owner=s.owner_h,
            reveal=reveal,
        )


async def test_the_studys_event_stream_is_blind_until_the_study_reveals(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    _, oh = await new_user(app, "own")
    body = {"name": "codes", "codes": [{"name": "clarify"}, {"name": "accept"}]}
    book = await ok(await client.post("/api/codebooks", json=body, headers=oh), 201)
    study = {
        "name": "Trips",
        "task": {"objective": "plan"},
        "conditions": [{"name": "tree"}],
        "codebook_id": book["id"],
    }
    made = await ok(await client.post("/api/studies", json=study, headers=oh), 201)
    sid = made["id"]
    heads = []
    for name in ("a", "b"):
        user, h = await new_user(app, name)
        member = {"user": user.name, "role": "coder"}
        await ok(await client.post(f"/api/studies/{sid}/members", json=member, headers=oh), 201)
        heads.append(h)
    joined = await ok(
        await client.post("/api/studies/join", json={"token": made["join_token"]}), 201
    )
    tid = joined["thread_id"]
    for text in ("first idea", "and more", "and the last"):
        await send(client, tid, text, bearer(joined["token"]))

    async def reveal() -> None:
        await ok(await client.patch(f"/api/studies/{sid}", json={"reveal": True}, headers=oh))

    async with live_server(app) as base:
        await blind_then_revealed(
            client,
            lambda h: sse(base, f"/api/studies/{sid}/events", h),
            tid=tid,
            codes=(book["codes"][0]["id"], book["codes"][1]["id"]),
            a=heads[0],
            b=heads[1],
            owner=oh,
            reveal=reveal,
        )


async def test_ahp_replays_keep_coding_blind(app: FastAPI, client: httpx.AsyncClient) -> None:
    """A reconnect's replay holds the coder's own coding and none of another coder's
    until the reveal; the owner's holds both."""
    s, ah, bh, reveal = await shared_family(app, client)
    channel = session_of(s.tid) + "/annotations"
    async with live_server(app) as base:
        probe = await AhpClient.open(base, token=bh["Authorization"].removeprefix("Bearer "))
        await probe.initialize(["1.0.0"])
        snap = (await probe.request("subscribe", {"channel": channel}))["snapshot"]
        at = int(snap["fromSeq"])
        await probe.close()
        theirs = (await code(client, s.tid, 1, s.code("planning"), ah))["id"]
        mine = (await code(client, s.tid, 2, s.code("planning"), bh))["id"]

        async def replayed(h: dict[str, str]) -> set[str]:
            c = await AhpClient.open(base, token=h["Authorization"].removeprefix("Bearer "))
            params = {"clientId": "x", "lastSeenServerSeq": at, "subscriptions": [channel]}
            result = await c.request("reconnect", params)
            assert result["type"] == "replay", result
            assert not c.invalid, c.invalid
            await c.close()
            return {
                str(e["action"]["annotation"]["id"])
                for e in result["actions"]
                if e["action"]["type"] == "annotations/set"
            }

        assert await replayed(bh) == {f"coding-{mine}"}
        assert await replayed(s.owner_h) == {f"coding-{theirs}", f"coding-{mine}"}
        await reveal()
        assert await replayed(bh) == {f"coding-{theirs}", f"coding-{mine}"}
