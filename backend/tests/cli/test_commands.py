"""The `haico` command as a whole, run as a process: `migrate` on an empty database,
`users create`, then `serve` answers in token mode; and what `serve` refuses before
it starts (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.server import SYSTEM_ALLOCATOR, free_port

HAICO = [sys.executable, "-m", "haico.cli.main"]


def _run(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*HAICO, *args], env=env, capture_output=True, text=True, timeout=120)


async def test_migrate_users_and_serve(empty_server_env: dict[str, str]) -> None:
    """`haico migrate` on an empty database, `users create`, then `haico serve` answers."""
    env = {**empty_server_env, **SYSTEM_ALLOCATOR, "HAICO_AUTH": "token"}
    out = _run(env, "migrate")
    assert out.returncode == 0, out.stderr
    assert "schema is up to date" in out.stdout
    out = _run(env, "users", "create", "ada")
    assert out.returncode == 0, out.stderr
    token = out.stdout.strip().splitlines()[-1]
    dup = _run(env, "users", "create", "ada")
    assert dup.returncode == 1 and "already exists" in dup.stderr

    port = free_port()
    proc = subprocess.Popen(
        [*HAICO, "serve", "--port", str(port), "--no-migrate"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=base, timeout=5) as c:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if (await c.get("/api/health")).status_code == 200:
                        break
                except httpx.TransportError:
                    pass
                assert time.monotonic() < deadline, "server did not start"
                await asyncio.sleep(0.2)
            assert (await c.get("/api/conversations")).status_code == 401
            h = {"Authorization": f"Bearer {token}"}
            r = await c.post("/api/conversations", json={"title": "cli"}, headers=h)
            assert r.status_code == 201
            assert (await c.get("/", headers=h)).status_code == 200
    finally:
        proc.terminate()
        proc.wait(timeout=20)


def test_sqlite_refuses_several_workers(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "HAICO_DATABASE_URL"}
    env.update(SYSTEM_ALLOCATOR, HAICO_DATA_DIR=str(tmp_path))
    out = _run(env, "serve", "--workers", "2", "--port", str(free_port()))
    assert out.returncode == 2 and "needs PostgreSQL" in out.stderr


def test_serve_refuses_no_workers(empty_server_env: dict[str, str]) -> None:
    """A usage error, before the database is touched: nothing is created."""
    env = {**empty_server_env, **SYSTEM_ALLOCATOR}
    out = _run(env, "serve", "--workers", "0", "--port", str(free_port()))
    assert out.returncode == 2
    assert "--workers: must be at least 1" in out.stderr
    assert not os.path.exists(os.path.join(env["HAICO_DATA_DIR"], "haico.db"))


def test_an_unknown_command_is_a_usage_error(server_env: dict[str, str]) -> None:
    out = _run(server_env, "frobnicate")
    assert out.returncode == 2
    assert "invalid choice: 'frobnicate'" in out.stderr
