"""`haico export THREAD_ID > file.json` and `haico import file.json`, run as the real
console script against a fresh database (SQLite and PostgreSQL), checked through the
real API on the same database."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from haico.config import Settings
from haico.main import create_app
from tests.families.test_research_transfer import (
    family_with_three_levels_and_a_fork,
    normalized,
)

HAICO = Path(sys.executable).parent / "haico"


@pytest.fixture
def env(server_env: dict[str, str]) -> dict[str, str]:
    return {**server_env, "HAICO_SECRET_KEY": "test-secret"}


async def haico(
    env: dict[str, str], *args: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [str(HAICO), *args],
        env=env,
        input=stdin,
        stdin=None if stdin is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


@asynccontextmanager
async def api(env: dict[str, str]) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        secret_key="test-secret",
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            yield c


async def test_export_and_import_from_the_command_line(env: dict[str, str], tmp_path: Path) -> None:
    done = await haico(env, "migrate")
    assert done.returncode == 0, done.stderr
    async with api(env) as client:
        ids = await family_with_three_levels_and_a_fork(client)
        served = (await client.get(f"/api/conversations/{ids['b1']}/export")).json()

    done = await haico(env, "export", ids["b1"])
    assert done.returncode == 0, done.stderr
    exported = json.loads(done.stdout)
    assert normalized(exported) == normalized(served)
    # the progress bar is on stderr, ending at every node
    nodes = len(exported["nodes"])
    assert f"export nodes [{'#' * 30}] {nodes}/{nodes}" in done.stderr
    file = tmp_path / "family.json"
    file.write_text(done.stdout)

    done = await haico(env, "import", str(file))
    assert done.returncode == 0, done.stderr
    new_root = done.stdout.strip().splitlines()[-1]
    assert new_root.startswith("th_") and new_root != ids["fork"]
    assert "import threads [" in done.stderr
    async with api(env) as client:
        again = (await client.get(f"/api/conversations/{new_root}/export")).json()
        assert normalized(again) == normalized(exported)
        listed = {c["thread_id"] for c in (await client.get("/api/conversations")).json()}
    assert new_root in listed

    # from stdin too
    done = await haico(env, "import", "-", stdin=file.read_text())
    assert done.returncode == 0, done.stderr

    # errors: unknown thread, unknown user, an invalid or future document, a missing file
    done = await haico(env, "export", f"th_{'3' * 32}")
    assert done.returncode == 1 and "not found" in done.stderr and done.stdout == ""
    done = await haico(env, "export", ids["b1"], "--user", "nobody")
    assert done.returncode == 1 and "no user named" in done.stderr
    future = {**exported, "version": 99}
    (tmp_path / "future.json").write_text(json.dumps(future))
    done = await haico(env, "import", str(tmp_path / "future.json"))
    assert done.returncode == 1 and "version" in done.stderr
    (tmp_path / "bad.json").write_text("{}")
    done = await haico(env, "import", str(tmp_path / "bad.json"))
    assert done.returncode == 1 and "not a valid export document" in done.stderr
    done = await haico(env, "import", str(tmp_path / "missing.json"))
    assert done.returncode == 1 and "cannot read" in done.stderr
    async with api(env) as client:
        after = {c["thread_id"] for c in (await client.get("/api/conversations")).json()}
    # the two successful imports added two families of four threads; nothing else
    assert len(after) == len(listed) + 4
