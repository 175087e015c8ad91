"""Three `haico serve` replicas on one PostgreSQL database behind the real proxy: Caddy
running the repository's own `deploy/Caddyfile` (the file docker-compose.replicas.yml
mounts), its upstreams and port taken from the environment.

What a user behind the proxy notices: streams arrive as the turn runs (the SSE of a
turn, the family's event stream and AHP WebSockets are not buffered), turns are
served by every replica, and when a replica dies mid-stream its followers reconnect
through the proxy to another one and lose nothing: an SSE follower resumes with
`Last-Event-ID`, an AHP client with `reconnect`.

The servers start once (they cost most of the module's time): one test runs the three
properties in turn, the one that kills a replica last.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from tests.ahp.live import chat_of
from tests.ahp.wire import AhpClient
from tests.conftest import PG_ADMIN_URL, _admin, _create_database
from tests.deploy.caddy_buffering import buffering_for
from tests.server import Server, free_port

ROOT = Path(__file__).resolve().parents[3]
CADDYFILE = ROOT / "deploy" / "Caddyfile"
REPLICAS = 3
API = "/api/conversations"
Json = dict[str, Any]


@dataclass
class Cluster:
    proxy: str
    servers: list[Server]
    db_url: str

    async def turn_pids(self) -> dict[str, int]:
        """The process serving each running turn (node id -> pid), from the turns'
        leases: a lease names its process (`host:pid:random`)."""
        conn = await asyncpg.connect(self.db_url)
        try:
            rows = await conn.fetch("SELECT thread_id, turn_index, process_id FROM active_turns")
        finally:
            await conn.close()
        return {f"{r[0]}:{r[1]}": int(r[2].split(":")[1]) for r in rows}

    def pid(self, server: Server) -> int:
        assert server.proc is not None
        return server.proc.pid


def _read(path: Path) -> str:
    return path.read_text()


async def _wait_proxy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 30
    async with httpx.AsyncClient(base_url=url, timeout=2) as c:
        while True:
            assert proc.poll() is None, f"caddy exited:\n{_read(log)}"
            with contextlib.suppress(httpx.TransportError):
                if (await c.get("/api/health")).status_code == 200:
                    return
            assert time.monotonic() < deadline, f"caddy did not answer:\n{_read(log)}"
            await asyncio.sleep(0.1)


@pytest.fixture(scope="module")
async def cluster(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Cluster]:
    """Caddy on `deploy/Caddyfile` in front of three replicas on one fresh database
    (created empty: the replicas migrate it themselves, one at a time)."""
    caddy = shutil.which("caddy")
    assert caddy, "Caddy is missing: `make caddy` installs Debian's package"
    version = subprocess.run([caddy, "version"], capture_output=True, text=True, check=True).stdout
    tmp = tmp_path_factory.mktemp("replicas")
    name = f"test_replicas_{uuid.uuid4().hex[:12]}"
    await _create_database(name)
    db_url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAICO_")}
    env.update(HAICO_DATABASE_URL=db_url, HAICO_AUTH="none", HAICO_SECRET_KEY="replicas")
    servers = [
        Server({**env, "HAICO_DATA_DIR": str(tmp / f"replica-{i}")}) for i in range(REPLICAS)
    ]
    port = free_port()
    log = tmp / "caddy.log"
    proxy: subprocess.Popen[bytes] | None = None
    try:
        await asyncio.gather(*(s.start() for s in servers))
        upstreams = " ".join(f"127.0.0.1:{s.port}" for s in servers)
        with log.open("wb") as out:
            proxy = subprocess.Popen(
                [caddy, "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
                env={
                    "PATH": os.environ.get("PATH", ""),
                    # Caddy keeps its own state under these; none of it is the user's.
                    "HOME": str(tmp),
                    "XDG_DATA_HOME": str(tmp / "caddy-data"),
                    "XDG_CONFIG_HOME": str(tmp / "caddy-config"),
                    "HAICO_PROXY_PORT": str(port),
                    "HAICO_UPSTREAMS": f"to {upstreams}",
                    "HAICO_PROXY_BUFFERING": buffering_for(version),
                },
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        await _wait_proxy(url, proxy, log)
        yield Cluster(url, servers, db_url)
    finally:
        if proxy is not None:
            # Caddy keeps nothing worth a graceful stop here, which would wait for
            # its clients' connections to go idle.
            proxy.kill()
            proxy.wait(timeout=10)
        await asyncio.gather(*(asyncio.to_thread(s.stop) for s in servers))
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _new_family(c: httpx.AsyncClient, title: str) -> str:
    r = await c.post(API, json={"title": title})
    assert r.status_code == 201, r.text
    return str(r.json()["thread_id"])


def _blocks(buf: str) -> tuple[list[dict[str, str]], str]:
    """Complete SSE events in `buf` (their fields), and what is left of it."""
    events = []
    while "\n\n" in buf:
        block, buf = buf.split("\n\n", 1)
        fields: dict[str, str] = {}
        for line in block.splitlines():
            key, _, value = line.partition(":")
            if key:
                fields[key] = fields.get(key, "") + value.removeprefix(" ")
        if "data" in fields:
            events.append(fields)
    return events, buf


@dataclass
class Turn:
    """A turn posted through the proxy, its SSE read as it arrives."""

    events: list[tuple[float, str, Json]] = field(default_factory=list)
    started: asyncio.Event = field(default_factory=asyncio.Event)

    async def run(self, base: str, tid: str, content: str) -> None:
        async with (
            httpx.AsyncClient(base_url=base, timeout=httpx.Timeout(30, read=60)) as c,
            c.stream("POST", f"{API}/{tid}/turns", json={"content": content}) as r,
        ):
            assert r.status_code == 200, await r.aread()
            buf = ""
            async for chunk in r.aiter_text():
                events, buf = _blocks(buf + chunk)
                for e in events:
                    self.events.append(
                        (time.monotonic(), e.get("event", ""), json.loads(e["data"]))
                    )
                    self.started.set()

    def times(self, name: str) -> list[float]:
        return [t for t, n, _ in self.events if n == name]

    @property
    def node_id(self) -> str:
        return str(next(d["node_id"] for _, n, d in self.events if n == "turn_started"))


@dataclass
class Follower:
    """GET …/events through the proxy as an EventSource follows it: when the
    connection ends or breaks, it connects again with `Last-Event-ID`."""

    base: str
    tid: str
    # (arrival, serverSeq, envelope) of every action received, over every connection.
    got: list[tuple[float, int, Json]] = field(default_factory=list)
    connections: int = 0
    opened: asyncio.Event = field(default_factory=asyncio.Event)
    last_id: int = 0

    async def run(self, until: Callable[[Json], bool]) -> None:
        async with httpx.AsyncClient(base_url=self.base, timeout=httpx.Timeout(30, read=60)) as c:
            while True:
                self.connections += 1
                with contextlib.suppress(httpx.TransportError):
                    async with c.stream(
                        "GET",
                        f"{API}/{self.tid}/events",
                        headers={"Last-Event-ID": str(self.last_id)},
                    ) as r:
                        assert r.status_code == 200, await r.aread()
                        self.opened.set()
                        buf = ""
                        async for chunk in r.aiter_text():
                            events, buf = _blocks(buf + chunk)
                            for e in events:
                                envelope = json.loads(e["data"])
                                self.last_id = int(e["id"])
                                self.got.append((time.monotonic(), self.last_id, envelope))
                                if until(envelope):
                                    return

    def seqs(self) -> list[int]:
        return [s for _, s, _ in self.got]


def _ends(node_id: str) -> Callable[[Json], bool]:
    return lambda env: (
        env["action"]["type"] == "chat/turnComplete" and env["action"].get("turnId") == node_id
    )


def _ends_any(env: Json) -> bool:
    return bool(env["action"]["type"] == "chat/turnComplete")


async def _ahp(base: str, tid: str) -> AhpClient:
    client = await AhpClient.open(base)
    await client.initialize(["1.0.0"])
    await client.request("subscribe", {"channel": chat_of(tid)})
    return client


def _spread(times: list[float]) -> float:
    return max(times) - min(times) if times else 0.0


async def streams_pass_through_unbuffered(cluster: Cluster) -> None:
    """A 3-second turn's tokens, the family's event stream and an AHP chat all arrive
    through the proxy while the turn runs, spread over its length, not in one burst
    at its end."""
    async with httpx.AsyncClient(base_url=cluster.proxy, timeout=30) as c:
        tid = await _new_family(c, "unbuffered")
    follower = Follower(cluster.proxy, tid)
    following = asyncio.create_task(follower.run(_ends_any))
    await asyncio.wait_for(follower.opened.wait(), 30)
    ahp = await _ahp(cluster.proxy, tid)
    turn = Turn()
    posting = asyncio.create_task(turn.run(cluster.proxy, tid, "wait: 3"))
    await ahp.wait_for(lambda e: e["action"]["type"] == "chat/delta")
    ahp_first_delta = time.monotonic()
    await asyncio.wait_for(posting, 30)
    await asyncio.wait_for(following, 30)
    await ahp.wait_for(_ends(turn.node_id))
    await ahp.close()

    tokens = turn.times("token")
    (completed,) = turn.times("turn_completed")
    assert len(tokens) >= 5, turn.events
    assert _spread(tokens) >= 1.5, f"tokens arrived within {_spread(tokens):.2f} s"
    assert completed - tokens[0] >= 1.5
    deltas = [t for t, _, env in follower.got if env["action"]["type"] == "chat/delta"]
    assert len(deltas) >= 5 and _spread(deltas) >= 1.5, f"SSE deltas within {_spread(deltas):.2f} s"
    ahp_deltas = [e for e in ahp.actions if e["action"]["type"] == "chat/delta"]
    assert len(ahp_deltas) >= 5
    assert completed - ahp_first_delta >= 1.5, "the AHP chat got its text at the end"
    assert "".join(e["action"]["content"] for e in ahp_deltas) == turn.events[-1][2]["reply"]


async def turns_spread_over_the_replicas(cluster: Cluster) -> None:
    """Six turns started at once through the proxy run on all three replicas (which
    process runs a turn is what its lease names)."""
    async with httpx.AsyncClient(base_url=cluster.proxy, timeout=30) as c:
        tids = [await _new_family(c, f"spread {i}") for i in range(6)]
    turns = [Turn() for _ in tids]
    running = [
        asyncio.create_task(t.run(cluster.proxy, tid, "wait: 2"))
        for t, tid in zip(turns, tids, strict=True)
    ]
    # Each turn's lease, read while it runs (a turn that ends early takes its lease
    # with it, so they are gathered as they are seen).
    pids: dict[str, int] = {}
    for _ in range(300):
        pids.update(await cluster.turn_pids())
        if len(pids) == len(turns):
            break
        await asyncio.sleep(0.1)
    await asyncio.wait_for(asyncio.gather(*running), 30)
    assert set(pids) == {t.node_id for t in turns}
    assert set(pids.values()) == {cluster.pid(s) for s in cluster.servers}, pids
    assert all(t.events[-1][1] == "turn_completed" for t in turns)


async def a_replica_killed_mid_stream_loses_its_followers_nothing(cluster: Cluster) -> None:
    """Three SSE followers and three AHP clients of one family, one of each on every
    replica (the proxy takes turns); a turn streams from one replica and another is
    SIGKILLed mid-turn. The followers it served reconnect through the proxy to a live
    replica, the SSE one with `Last-Event-ID`, the AHP one with `reconnect`, and end
    with exactly the actions the others saw: none lost, none twice."""
    async with httpx.AsyncClient(base_url=cluster.proxy, timeout=30) as c:
        tid = await _new_family(c, "killed")
    chat = chat_of(tid)
    followers = [Follower(cluster.proxy, tid) for _ in range(REPLICAS)]
    following: list[asyncio.Task[None]] = []
    for f in followers:  # one at a time: the proxy's round robin gives each a replica
        following.append(asyncio.create_task(f.run(_ends_any)))
        await asyncio.wait_for(f.opened.wait(), 30)
    clients = [await _ahp(cluster.proxy, tid) for _ in range(REPLICAS)]
    turn = Turn()
    posting = asyncio.create_task(turn.run(cluster.proxy, tid, "wait: 4"))
    await asyncio.wait_for(turn.started.wait(), 30)
    node = turn.node_id
    serving = (await cluster.turn_pids())[node]
    victim = next(s for s in cluster.servers if cluster.pid(s) != serving)

    def mid_stream() -> bool:
        sse = all(any(e["action"]["type"] == "chat/delta" for _, _, e in f.got) for f in followers)
        ahp = all(any(e["action"]["type"] == "chat/delta" for e in a.actions) for a in clients)
        return sse and ahp

    deadline = time.monotonic() + 30
    while not mid_stream():
        assert time.monotonic() < deadline, "the followers saw no streamed text"
        await asyncio.sleep(0.05)
    victim.kill()

    # The AHP clients the victim served see their socket close; each reconnects
    # through the proxy, asks for what it missed after the last action it saw, and
    # is subscribed again (it receives the rest of the turn live).
    await asyncio.wait([a.task for a in clients], timeout=15, return_when=asyncio.FIRST_COMPLETED)
    cut = [a for a in clients if a.task.done()]
    kept = [a for a in clients if not a.task.done()]
    resumed: list[tuple[AhpClient, list[Json]]] = []
    for i, lost in enumerate(cut):
        fresh = await AhpClient.open(cluster.proxy)
        await fresh.initialize(["1.0.0"])
        result = await fresh.request(
            "reconnect",
            {
                "clientId": f"cut-{i}",
                "lastSeenServerSeq": max(int(e["serverSeq"]) for e in lost.actions),
                "subscriptions": [chat],
            },
        )
        assert result["type"] == "replay" and result["missing"] == [], result
        resumed.append((fresh, [*lost.actions, *result["actions"]]))
    await asyncio.wait_for(posting, 30)
    assert turn.events[-1][1] == "turn_completed", turn.events[-1]
    await asyncio.wait_for(asyncio.gather(*following), 30)
    for a in kept:
        await a.wait_for(_ends(node))
    # Subscribed again: an edit made now reaches the resumed clients live, as the others.
    async with httpx.AsyncClient(base_url=cluster.proxy, timeout=30) as c:
        r = await c.put(f"{API}/{tid}/objective", json={"text": "after the kill"})
        assert r.status_code == 200, r.text
    for a in [*kept, *(fresh for fresh, _ in resumed)]:
        await a.wait_for(lambda e: e["action"].get("item") == {"text": "after the kill"})

    # What the log holds, read afterwards in one go.
    whole = Follower(cluster.proxy, tid)
    await asyncio.wait_for(whole.run(_ends(node)), 30)
    # SSE: the follower the victim served connected twice; every follower, cut or
    # not, received the family's log from its start to the turn's end, once and in order.
    assert 2 in [f.connections for f in followers], [f.connections for f in followers]
    assert max(f.connections for f in followers) == 2
    for f in followers:
        assert f.seqs() == whole.seqs()

    # AHP: the turn's actions on the chat channel, as the log has them, reached the
    # clients that stayed and, across their two connections, the ones that were cut.
    def of_turn(envelopes: list[Json]) -> list[int]:
        return [
            int(e["serverSeq"])
            for e in envelopes
            if e["channel"] == chat and e["action"].get("turnId") == node
        ]

    logged = of_turn([env for _, _, env in whole.got])
    assert len(cut) >= 1 and len(kept) >= 1
    for a in kept:
        assert of_turn(a.actions) == logged
    for fresh, before in resumed:
        assert of_turn([*before, *fresh.actions]) == logged
        await fresh.close()
    for a in clients:
        await a.close()
        assert not a.invalid, a.invalid[:1]


async def test_replicas_behind_caddy(cluster: Cluster) -> None:
    """The three properties, one after the other on one set of servers (one test, so
    that the suite's parallel workers never start the servers twice); the kill last."""
    await streams_pass_through_unbuffered(cluster)
    await turns_spread_over_the_replicas(cluster)
    await a_replica_killed_mid_stream_loses_its_followers_nothing(cluster)
