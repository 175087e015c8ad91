"""A replica that dies without refusing connections costs a POST through
deploy/Caddyfile some latency, never a 502.

That is how a killed container looks to Caddy: its address stays in the list until
the next DNS lookup, and a connection attempt to it hangs until the dial timeout
(tests/compose/test_replicas.py kills a real one). On a host a dead port refuses at
once, so test_replicas_proxy.py cannot see it. Here the silent replica is a listening
socket whose accept queue is full: the kernel drops further connection attempts
without an answer, as for an address nobody holds any more. Caddy (Debian's 2.6 on
the repository's file) sends one of two POSTs there first; the file must make it
give up within its dial timeout and send the POST, body and all, to the live replica.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.deploy.caddy_buffering import buffering_for
from tests.server import Server, free_port

ROOT = Path(__file__).resolve().parents[3]
CADDYFILE = ROOT / "deploy" / "Caddyfile"


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port on loopback where a connection attempt hangs."""
    hole = socket.socket()
    hole.bind(("127.0.0.1", 0))
    hole.listen(0)
    port = hole.getsockname()[1]
    fillers = []
    for _ in range(3):  # never accepted: they fill the queue
        s = socket.socket()
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        fillers.append(s)
    time.sleep(0.2)
    with pytest.raises(TimeoutError):  # the premise: the next attempt gets no answer
        socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
    yield port
    for s in [*fillers, hole]:
        s.close()


async def test_a_post_first_sent_to_a_silent_replica_reaches_a_live_one(
    silent_port: int, tmp_path: Path
) -> None:
    caddy = shutil.which("caddy")
    assert caddy, "Caddy is missing: `make caddy` installs Debian's package"
    version = subprocess.run([caddy, "version"], capture_output=True, text=True, check=True).stdout
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAICO_")}
    live = Server({**env, "HAICO_DATA_DIR": str(tmp_path / "live"), "HAICO_AUTH": "none"})
    port = free_port()
    log = tmp_path / "caddy.log"
    proxy: subprocess.Popen[bytes] | None = None
    try:
        await live.start()
        with log.open("wb") as out:
            proxy = subprocess.Popen(
                [caddy, "run", "--config", str(CADDYFILE), "--adapter", "caddyfile"],
                env={
                    "PATH": os.environ.get("PATH", ""),
                    "HOME": str(tmp_path),
                    "XDG_DATA_HOME": str(tmp_path / "caddy-data"),
                    "XDG_CONFIG_HOME": str(tmp_path / "caddy-config"),
                    "HAICO_PROXY_PORT": str(port),
                    "HAICO_UPSTREAMS": f"to 127.0.0.1:{silent_port} 127.0.0.1:{live.port}",
                    "HAICO_PROXY_BUFFERING": buffering_for(version),
                },
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        url = f"http://127.0.0.1:{port}"
        # Caddy listening is enough; a request through it now could mark the silent
        # replica down (fail_duration) before the POSTs are sent.
        deadline = time.monotonic() + 30
        while True:
            assert proxy.poll() is None, log.read_text()
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert time.monotonic() < deadline, log.read_text()
            await asyncio.sleep(0.1)
        async with httpx.AsyncClient(base_url=url, timeout=30) as c:
            took = []
            for i in range(4):
                start = time.monotonic()
                r = await c.post("/api/conversations", json={"title": f"through {i}"})
                took.append(time.monotonic() - start)
                assert r.status_code == 201, (i, r.status_code, r.text, log.read_text()[-2000:])
            listed = (await c.get("/api/conversations")).json()
        # Each POST reached the live replica once; the ones tried on the silent one first
        # waited for the dial timeout (1 s) and no longer.
        assert sorted(t["title"] for t in listed) == [f"through {i}" for i in range(4)]
        assert 0.9 < max(took) < 2.5, took
    finally:
        if proxy is not None:
            proxy.kill()
            proxy.wait(timeout=10)
        await asyncio.to_thread(live.stop)
