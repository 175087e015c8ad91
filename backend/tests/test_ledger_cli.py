"""`haico export --csv`, run as a process on a fresh database (SQLite and PostgreSQL):
the same rows as `GET …/export.csv`, with a progress bar on stderr."""

from __future__ import annotations

import asyncio
import csv
import io
from pathlib import Path

import httpx

from app.config import Settings
from app.main import create_app
from tests.helpers import run_cli
from tests.history_helpers import new_thread, turn_ok


async def test_export_csv_from_the_command_line(server_env: dict[str, str]) -> None:
    env = {**server_env, "HAICO_SECRET_KEY": "test-secret"}
    done = await asyncio.to_thread(run_cli, env, "migrate")
    assert done.returncode == 0, done.stderr
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        secret_key="test-secret",
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as client:
            tid = await new_thread(client)
            await turn_ok(client, tid, "objective: one, two")
            await turn_ok(client, tid, "todo: three")
            other = await new_thread(client)
            await turn_ok(client, other, "hello")
            served = (await client.get(f"/api/conversations/{tid}/export.csv")).text

    done = await asyncio.to_thread(run_cli, env, "export", "--csv", tid)
    assert done.returncode == 0, done.stderr
    assert done.stdout.replace("\r\n", "\n") == served.replace("\r\n", "\n")
    assert f"export rows [{'#' * 30}] 2/2" in done.stderr

    done = await asyncio.to_thread(run_cli, env, "export", "--csv")
    assert done.returncode == 0, done.stderr
    rows = list(csv.DictReader(io.StringIO(done.stdout, newline="")))
    assert {r["root_thread_id"] for r in rows} == {tid, other} and len(rows) == 3
    assert f"export rows [{'#' * 30}] 3/3" in done.stderr

    done = await asyncio.to_thread(run_cli, env, "export")
    assert done.returncode == 2 and "THREAD_ID is required" in done.stderr
