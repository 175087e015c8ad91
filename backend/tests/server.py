"""Run the real `haico serve` process for end-to-end tests."""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
from fastapi import FastAPI

from haico.config import Settings
from haico.main import create_app

# Output files of servers still unremoved (a test that ended its server itself): removed
# when the test session ends.
_LOGS: set[Path] = set()
atexit.register(lambda: [p.unlink(missing_ok=True) for p in list(_LOGS)])


# What a test's server process runs with unless its environment says otherwise:
# CPython's allocator, so that `haico serve` does not start twice (`haico.process.allocator`).
SYSTEM_ALLOCATOR = {"HAICO_ALLOCATOR": "system"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, env: dict[str, str], *, kill_at: str | None = None) -> None:
        """`kill_at`: serve through `tests.fault_server`, which SIGKILLs itself when a
        multi-step write reaches that step. The server runs on CPython's allocator
        unless `env` names one (`HAICO_ALLOCATOR`): re-executing under jemalloc would
        start every test server twice (only tests/process/test_allocator.py asks for it)."""
        self.env = {**SYSTEM_ALLOCATOR, **env}
        self.kill_at = kill_at
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        """Start the process and wait until it serves."""
        self.spawn()
        assert self.proc is not None
        deadline = time.monotonic() + 60
        async with httpx.AsyncClient(base_url=self.url, timeout=2) as c:
            while True:
                assert self.proc.poll() is None, "server exited during start"
                try:
                    if (await c.get("/api/health")).status_code == 200:
                        return
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "server did not start"
                await asyncio.sleep(0.2)

    def spawn(self) -> None:
        """Start the process (without waiting for it to serve)."""
        # The process's output goes to a temporary file (`log_tail` reads it for a failing
        # test's message; removed when the server stops), or to HAICO_TEST_SERVER_LOG.
        self._forget_log()
        log_path = os.environ.get("HAICO_TEST_SERVER_LOG")
        if log_path is None:
            fd, log_path = tempfile.mkstemp(prefix="haico-test-server-", suffix=".log")
            os.close(fd)
            self.log = Path(log_path)
            _LOGS.add(self.log)
        out = open(log_path, "ab")  # noqa: SIM115
        command = ["-m", "haico.cli.main", "serve", "--port", str(self.port)]
        if self.kill_at is not None:
            command = ["-m", "tests.fault_server", str(self.port), self.kill_at]
        self.proc = subprocess.Popen(
            [sys.executable, *command],
            env=self.env,
            stdout=out,
            stderr=out,
        )
        out.close()  # the child holds its own copy

    def log_tail(self, lines: int = 40) -> str:
        """The end of the server's output (for an assertion's message)."""
        path = self.log or Path(os.environ.get("HAICO_TEST_SERVER_LOG", "/dev/null"))
        try:
            return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _forget_log(self) -> None:
        if self.log is not None:
            self.log.unlink(missing_ok=True)
            _LOGS.discard(self.log)
            self.log = None

    def wait_killed(self, timeout: float = 30) -> None:
        """Wait for the process to die by its own SIGKILL (a `kill_at` server)."""
        assert self.proc is not None
        code = self.proc.wait(timeout=timeout)
        assert code == -signal.SIGKILL, f"exited with {code}, not by SIGKILL"

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=20)
        self._forget_log()

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
        self._forget_log()


@contextlib.asynccontextmanager
async def served_here(env: dict[str, str]) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The app a `Server(env)` serves (its database, data directory and auth), started
    in this process: for a test whose server only has to start again on the database a
    killed or stopped one left, and answer. Its start does what a server's does."""
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        auth=env.get("HAICO_AUTH", "none"),
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            yield app, c
