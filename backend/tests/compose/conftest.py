"""The compose deployment for real: `docker compose` builds the repository's
Dockerfile and starts docker-compose.yml (and docker-compose.replicas.yml) on the
engine that `make test-compose` found or started (scripts/compose/test-compose.sh).

Not part of `make pytest` (tests/conftest.py leaves this directory out unless
HAICO_COMPOSE_SUITE=1). The base images come from the environment, as compose reads
them: HAICO_NODE_IMAGE, HAICO_PYTHON_IMAGE, HAICO_POSTGRES_IMAGE, HAICO_CADDY_IMAGE
(unset: the official images). Each stack is a compose project of its own, on a free
host port, taken down with its volumes at the end; the session then checks that no
container, network or volume of its projects is left.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.deploy.caddy_buffering import buffering_for
from tests.server import free_port

ROOT = Path(__file__).resolve().parents[3]
SESSION = uuid.uuid4().hex[:8]
Json = dict[str, Any]

# Figures measured by the tests, printed at the end of the run (docs/operations.md
# quotes them).
FIGURES: dict[str, str] = {}


def figure(name: str, value: str) -> None:
    FIGURES[name] = value


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if FIGURES:
        terminalreporter.section("compose figures")
        for name, value in FIGURES.items():
            terminalreporter.write_line(f"{name}: {value}")


def docker(*args: str, check: bool = True, timeout: float = 600) -> str:
    run = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=timeout, check=False
    )
    if check and run.returncode != 0:
        raise AssertionError(f"docker {' '.join(args)} exited {run.returncode}:\n{run.stderr}")
    return run.stdout


@dataclass
class Stack:
    """One compose project: `docker compose -p NAME -f …` with its own port."""

    name: str
    files: list[str]
    env: dict[str, str] = field(default_factory=dict)
    port: int = field(default_factory=free_port)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def compose(self, *args: str, check: bool = True, timeout: float = 900) -> str:
        cmd = ["docker", "compose", "-p", self.name]
        for f in self.files:
            cmd += ["-f", str(ROOT / f)]
        env = {**os.environ, **self.env, "HAICO_PORT": str(self.port)}
        run = subprocess.run(
            [*cmd, *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and run.returncode != 0:
            logs = subprocess.run(
                [*cmd, "logs", "--no-color", "--tail", "40"],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            ).stdout
            raise AssertionError(
                f"docker compose {' '.join(args)} exited {run.returncode}:\n{run.stderr}\n{logs}"
            )
        return run.stdout

    def up(self) -> float:
        """`up -d --wait`: every service started and healthy. Returns the seconds taken."""
        start = time.monotonic()
        self.compose("up", "-d", "--wait", "--wait-timeout", "180")
        return time.monotonic() - start

    def containers(self, service: str) -> list[str]:
        """The running containers of `service`, by id."""
        return self.compose("ps", "-q", service).split()

    def config(self) -> Json:
        data: Json = json.loads(self.compose("config", "--format", "json"))
        return data

    def sql(self, query: str) -> list[str]:
        """One query through psql in the db container; its rows, one line each."""
        out = self.compose("exec", "-T", "db", "psql", "-U", "haico", "-d", "haico", "-Atc", query)
        return [line for line in out.splitlines() if line]

    def down(self) -> None:
        self.compose("down", "-v", "--remove-orphans", "--timeout", "10")


def caddy_buffering() -> str:
    """HAICO_PROXY_BUFFERING for the proxy image in use (deploy/Caddyfile)."""
    image = os.environ.get("HAICO_CADDY_IMAGE") or "caddy:2"
    if not docker("image", "inspect", image, check=False).strip().startswith("["):
        docker("pull", "-q", image)
    return buffering_for(docker("run", "--rm", image, "caddy", "version"))


def new_stack(kind: str, files: list[str], **env: str) -> Stack:
    return Stack(
        f"haico-test-{SESSION}-{kind}",
        files,
        {"POSTGRES_PASSWORD": f"pw-{SESSION}", "HAICO_SECRET_KEY": f"secret-{SESSION}", **env},
    )


@pytest.fixture(scope="session")
def built() -> Iterator[float]:
    """The app image, built once for every stack (both compose files build the same
    `haico:latest`); yields the seconds the build took. At the end, nothing of this
    session's projects may be left on the engine."""
    stack = new_stack("build", ["docker-compose.yml"])
    start = time.monotonic()
    stack.compose("build", "app", timeout=1800)
    took = time.monotonic() - start
    figure("docker compose build", f"{took:.0f} s")
    yield took
    prefix = f"haico-test-{SESSION}"
    for what, name in ((("ps", "-a"), "{{.Names}}"), (("network", "ls"), "{{.Name}}"),
                       (("volume", "ls"), "{{.Name}}")):  # fmt: skip
        left = docker(*what, "--filter", "label=com.docker.compose.project", "--format", name)
        mine = [n for n in left.split() if n.startswith(prefix)]
        assert not mine, f"left behind: {mine}"


@pytest.fixture(scope="module")
async def single(built: float) -> AsyncIterator[Stack]:
    """docker-compose.yml alone: PostgreSQL and one app, token auth."""
    stack = new_stack("single", ["docker-compose.yml"], HAICO_AUTH="token")
    try:
        figure("single app: up -d --wait (fresh volumes)", f"{stack.up():.1f} s")
        yield stack
    finally:
        await asyncio.to_thread(stack.down)


@pytest.fixture(scope="module")
async def replicas(built: float) -> AsyncIterator[Stack]:
    """Both files: PostgreSQL, two app replicas and Caddy on deploy/Caddyfile."""
    stack = new_stack(
        "replicas",
        ["docker-compose.yml", "docker-compose.replicas.yml"],
        HAICO_AUTH="none",
        HAICO_REPLICAS="2",
        HAICO_PROXY_BUFFERING=os.environ.get("HAICO_PROXY_BUFFERING") or caddy_buffering(),
    )
    try:
        figure("replicas: up -d --wait (fresh volumes)", f"{stack.up():.1f} s")
        yield stack
    finally:
        await asyncio.to_thread(stack.down)


async def wait_healthy(url: str, within: float = 60) -> float:
    """Seconds until GET /api/health answers 200 at `url`."""
    start = time.monotonic()
    async with httpx.AsyncClient(base_url=url, timeout=2) as c:
        while True:
            try:
                if (await c.get("/api/health")).status_code == 200:
                    return time.monotonic() - start
            except httpx.TransportError:
                pass
            assert time.monotonic() - start < within, f"{url} not healthy within {within} s"
            await asyncio.sleep(0.2)
