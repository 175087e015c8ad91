"""Run the real `haico serve` process for end-to-end tests."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import time

import httpx


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, env: dict[str, str], *, kill_at: str | None = None) -> None:
        """`kill_at`: serve through `tests.fault_server`, which SIGKILLs itself when a
        multi-step write reaches that step."""
        self.env = env
        self.kill_at = kill_at
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        # HAICO_TEST_SERVER_LOG=<file> keeps the process's output for debugging.
        log_path = os.environ.get("HAICO_TEST_SERVER_LOG")
        out = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: ASYNC230, SIM115
        command = ["-m", "app.cli", "serve", "--port", str(self.port)]
        if self.kill_at is not None:
            command = ["-m", "tests.fault_server", str(self.port), self.kill_at]
        self.proc = subprocess.Popen(
            [sys.executable, *command],
            env=self.env,
            stdout=out,
            stderr=out,
        )
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

    def wait_killed(self, timeout: float = 30) -> None:
        """Wait for the process to die by its own SIGKILL (a `kill_at` server)."""
        assert self.proc is not None
        code = self.proc.wait(timeout=timeout)
        assert code == -signal.SIGKILL, f"exited with {code}, not by SIGKILL"

    def kill(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(timeout=20)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.kill()
