"""`haico export --csv`, run as a process on the test's database (SQLite and
PostgreSQL): the same rows as `GET …/export.csv`, with a progress bar on stderr."""

from __future__ import annotations

import argparse
import asyncio
import csv
import io
from pathlib import Path

import httpx
import pytest

from haico.cli import transfer as cli_transfer
from haico.cli.schema import migrate
from haico.config import Settings
from haico.main import create_app
from tests.helpers import run_cli
from tests.history_helpers import new_thread, turn_ok


async def test_export_csv_from_the_command_line(
    server_env: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    env = {**server_env, "HAICO_SECRET_KEY": "test-secret"}
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        secret_key="test-secret",
    )
    # The schema through the migrations, as `haico migrate` makes it (in this process).
    await asyncio.to_thread(migrate, settings)
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
    # (the captured text has its CRLFs read as newlines)
    assert done.stdout == served.replace("\r\n", "\n")
    assert f"export rows [{'#' * 30}] 2/2" in done.stderr

    # every family of the user (in this process: the command's code, not its startup)
    args = argparse.Namespace(command="export", thread_id=None, csv=True, user=None)
    assert await asyncio.to_thread(cli_transfer.run, settings, args) == 0
    out = capsys.readouterr()
    rows = list(csv.DictReader(io.StringIO(out.out, newline="")))
    assert {r["root_thread_id"] for r in rows} == {tid, other} and len(rows) == 3
    assert f"export rows [{'#' * 30}] 3/3" in out.err


def test_export_needs_a_thread_unless_csv(capsys: pytest.CaptureFixture[str]) -> None:
    args = argparse.Namespace(command="export", thread_id=None, csv=False, user="someone")
    assert cli_transfer.run(Settings(), args) == 2
    assert "THREAD_ID is required" in capsys.readouterr().err
