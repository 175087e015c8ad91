"""`haico serve --workers 2` on PostgreSQL: two processes on one port behave as one
server. Which worker answers a connection is read off /proc (the worker process that
holds the server end of the client's TCP connection), so every step states, and
checks, which worker it went through."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from haico.domain import NodeState
from tests.server import SYSTEM_ALLOCATOR, free_port
from tests.sse_client import parse_sse

ON_PG = pytest.mark.parametrize("backend", ["postgres"], indirect=True)
LINUX = pytest.mark.skipif(not Path("/proc/net/tcp").exists(), reason="reads /proc (Linux)")


class Workers:
    """`haico serve --workers N` as a real process tree."""

    def __init__(self, env: dict[str, str], workers: int = 2) -> None:
        self.env, self.workers, self.port = {**SYSTEM_ALLOCATOR, **env}, workers, free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def children(self) -> list[int]:
        assert self.proc is not None
        path = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
        return [int(p) for p in path.read_text().split()] if path.exists() else []

    def worker_pids(self) -> list[int]:
        """The children that serve (uvicorn's workers; not multiprocessing helpers)."""
        return [p for p in self.children() if _listens(p, self.port)]

    async def start(self) -> None:
        self.proc = subprocess.Popen(
            [
                *(sys.executable, "-m", "haico.cli.main", "serve"),
                *("--port", str(self.port), "--workers", str(self.workers)),
            ],
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 90
        async with httpx.AsyncClient(base_url=self.url, timeout=2) as c:
            while True:
                assert self.proc.poll() is None, "server exited during start"
                with contextlib.suppress(httpx.TransportError):
                    if (await c.get("/api/health")).status_code == 200 and len(
                        self.worker_pids()
                    ) == self.workers:
                        return
                assert time.monotonic() < deadline, "workers did not start"
                await asyncio.sleep(0.2)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                for pid in self.children():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(pid, signal.SIGKILL)
                self.proc.kill()
                self.proc.wait(timeout=10)


def _socket_inodes(pid: int) -> set[str]:
    inodes = set()
    fd_dir = Path(f"/proc/{pid}/fd")
    with contextlib.suppress(FileNotFoundError, PermissionError):
        for fd in fd_dir.iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(target[8:-1])
    return inodes


def _tcp_rows() -> list[tuple[int, int, str]]:
    """(local port, remote port, inode) of every IPv4 TCP socket."""
    rows = []
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        cols = line.split()
        rows.append((int(cols[1].split(":")[1], 16), int(cols[2].split(":")[1], 16), cols[9]))
    return rows


def _listens(pid: int, port: int) -> bool:
    mine = _socket_inodes(pid)
    return any(lp == port and rp == 0 and ino in mine for lp, rp, ino in _tcp_rows())


def worker_of(server: Workers, response: httpx.Response) -> int:
    """The worker pid holding the server end of the connection `response` came on
    (call it while the connection is still open: during a stream, or right after)."""
    client_port = response.extensions["network_stream"].get_extra_info("client_addr")[1]
    inode = next(
        ino for lp, rp, ino in _tcp_rows() if lp == server.port and rp == client_port and ino != "0"
    )
    owners = [pid for pid in server.worker_pids() if inode in _socket_inodes(pid)]
    assert len(owners) == 1, owners
    return owners[0]


async def client_on(server: Workers, pid: int) -> httpx.AsyncClient:
    """A client whose one kept-alive connection is served by worker `pid`."""
    for _ in range(200):
        c = httpx.AsyncClient(
            base_url=server.url,
            timeout=60,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )
        r = await c.get("/api/health")
        if worker_of(server, r) == pid:
            return c
        await c.aclose()
    raise AssertionError(f"no connection landed on worker {pid}")


class Follower:
    """The family's event stream on one client, with the worker that serves it."""

    def __init__(self, server: Workers, client: httpx.AsyncClient, thread_id: str) -> None:
        self.server, self.client, self.thread_id = server, client, thread_id
        self.actions: list[dict[str, Any]] = []
        self.worker: int | None = None
        self.ready = asyncio.Event()
        self.task = asyncio.create_task(self._run())

    async def _run(self) -> None:
        url = f"/api/conversations/{self.thread_id}/events?after=0"
        async with self.client.stream("GET", url, timeout=None) as r:
            self.worker = worker_of(self.server, r)
            self.ready.set()
            async for line in r.aiter_lines():
                if line.startswith("data:"):
                    self.actions.append(json.loads(line[5:])["action"])

    async def wait_for(self, kind: str, within: float = 20) -> dict[str, Any]:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for action in self.actions:
                if action["type"] == kind:
                    return action
            await asyncio.sleep(0.02)
        raise AssertionError(f"{kind} never arrived; got {[a['type'] for a in self.actions]}")

    async def close(self) -> None:
        self.task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self.task


@pytest.fixture
async def workers(server_env: dict[str, str]) -> AsyncIterator[Workers]:
    env = {
        **server_env,
        # The sweep runs every heartbeat: a killed worker's turn is found in about a
        # second, long before its heartbeat would go stale (30 s).
        "HAICO_HEARTBEAT_SECONDS": "0.5",
        "HAICO_EVENT_POLL_SECONDS": "0",  # only LISTEN/NOTIFY crosses processes
    }
    server = Workers(env, workers=2)
    await server.start()
    try:
        yield server
    finally:
        server.stop()


@ON_PG
@LINUX
async def test_two_workers_turn_checkout_and_sweep(workers: Workers) -> None:
    pid_a, pid_b = workers.worker_pids()
    a = await client_on(workers, pid_a)
    b = await client_on(workers, pid_b)
    try:
        tid = (await a.post("/api/conversations", json={"title": "w"})).json()["thread_id"]

        # 1. A turn sent through worker A is seen live by a follower on worker B.
        follower = Follower(workers, b, tid)
        await asyncio.wait_for(follower.ready.wait(), 10)
        assert follower.worker == pid_b
        async with a.stream(
            "POST", f"/api/conversations/{tid}/turns", json={"content": "wait: 2"}
        ) as r:
            assert worker_of(workers, r) == pid_a
            body = ""
            chunks = r.aiter_text()
            async for chunk in chunks:
                body += chunk
                if "turn_started" in body:
                    break
            # Still streaming on A: B's follower already has the turn.
            started = await follower.wait_for("chat/turnStarted", within=5)
            assert started["turnId"] == f"{tid}:1"
            assert "turn_completed" not in body
            async for chunk in chunks:
                body += chunk
        assert parse_sse(body)[-1][0] == "turn_completed"
        await follower.wait_for("chat/turnComplete")
        await follower.close()
        # The follower's stream held B's only connection; a fresh one for what follows.
        await b.aclose()
        b = await client_on(workers, pid_b)

        r = await b.post(f"/api/conversations/{tid}/turns", json={"content": "objective: two"})
        assert worker_of(workers, r) == pid_b
        assert parse_sse(r.text)[-1][0] == "turn_completed"

        # 2. A checkout with a stale expected head loses on either worker.
        url = f"/api/conversations/{tid}/checkout"
        for client, pid in ((a, pid_a), (b, pid_b)):
            r = await client.post(url, json={"turn_id": f"{tid}:1", "expected_head_turn_id": None})
            assert worker_of(workers, r) == pid
            assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
        r = await b.post(url, json={"turn_id": f"{tid}:1", "expected_head_turn_id": f"{tid}:2"})
        assert r.status_code == 200, r.text
        assert r.json()["head_turn_id"] == f"{tid}:1"
        # B moved the head: the same expectation is now stale on A.
        r = await a.post(url, json={"turn_id": f"{tid}:2", "expected_head_turn_id": f"{tid}:2"})
        assert worker_of(workers, r) == pid_a
        assert r.status_code == 409 and r.json()["code"] == "conflict", r.text
        r = await a.post(url, json={"turn_id": f"{tid}:2", "expected_head_turn_id": f"{tid}:1"})
        assert r.status_code == 200, r.text

        # 3. Kill worker A in the middle of a turn: worker B's sweep records it.
        other = (await b.post("/api/conversations", json={})).json()["thread_id"]
        follower = Follower(workers, b, other)
        await asyncio.wait_for(follower.ready.wait(), 10)
        killed = asyncio.Event()

        async def doomed_turn() -> None:
            async with a.stream(
                "POST", f"/api/conversations/{other}/turns", json={"content": "wait: 30"}
            ) as r:
                assert worker_of(workers, r) == pid_a
                async for chunk in r.aiter_text():
                    if "turn_started" in chunk:
                        os.kill(pid_a, signal.SIGKILL)
                        killed.set()

        task = asyncio.create_task(doomed_turn())
        await asyncio.wait_for(killed.wait(), 20)
        with contextlib.suppress(httpx.HTTPError):
            await task
        killed_at = time.monotonic()
        error = await follower.wait_for("chat/error", within=20)
        assert error["turnId"] == f"{other}:1"
        assert time.monotonic() - killed_at < 15  # by the dead pid, not the 30 s timeout
        await follower.close()
        async with httpx.AsyncClient(base_url=workers.url, timeout=60) as c:
            graph = (await c.get(f"/api/conversations/{other}/graph")).json()
            node = next(n for n in graph["nodes"] if n["turn_index"] == 1)
            assert node["state"] == NodeState.ERROR and node["user_message"] == "wait: 30"
            r = await c.post(f"/api/conversations/{other}/turns", json={"content": "objective: on"})
            assert parse_sse(r.text)[-1][0] == "turn_completed"
        assert pid_a not in workers.worker_pids()  # uvicorn started a fresh worker instead
    finally:
        await a.aclose()
        await b.aclose()
