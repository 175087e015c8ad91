"""Data safety: a backup taken while turns run restores to a consistent database, and
`haico check` finds every kind of inconsistency it names.

Real processes for what crosses them: the server (`tests.server.Server`), `haico
backup`, `restore`, `check` and `janitor` as subprocesses, `pg_dump`/`pg_restore` on
PostgreSQL; the check's rules, one kind of problem at a time, in this process. Each
test has its own database (`server_env`), so a whole-database check sees only what
the test made.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from langchain_core.messages import HumanMessage
from sqlalchemy import delete, update

from haico.cli.schema import migrate
from haico.config import Settings
from haico.db.models import ChatHead, Conversation, WorkspaceSnapshot
from haico.domain import BranchStatus, new_thread_id
from haico.main import create_app
from haico.services.maintenance import consistency
from tests.conftest import PG_ADMIN_URL, _admin
from tests.helpers import add_branch_row, db_of, run_cli
from tests.server import Server
from tests.sse_client import send_turn

FAMILIES = 4


def _check(env: dict[str, str]) -> tuple[int, dict[str, Any]]:
    out = run_cli(env, "check")
    assert out.returncode in (0, 1), out.stderr
    return out.returncode, json.loads(out.stdout)


async def _turn(c: httpx.AsyncClient, thread_id: str, content: str) -> None:
    status, events, body = await send_turn(c, thread_id, content)
    assert status == 200 and events[-1][0] == "turn_completed", (status, events[-1:], body)


async def _family(c: httpx.AsyncClient) -> str:
    """A root with three turns and a branch at 1 with one turn; the head back on the
    root's tip, so the family has an off-path branch."""
    root = (await c.post("/api/conversations", json={})).json()["thread_id"]
    for text in ("objective: one; todo: a", "prefer: short", "objective: three"):
        await _turn(c, root, text)
    branch = (await c.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})).json()
    await _turn(c, branch["thread_id"], "todo: on the branch")
    r = await c.post(f"/api/conversations/{root}/checkout", json={"turn_id": f"{root}:3"})
    assert r.status_code == 200, r.text
    return root


async def _slow_turns(c: httpx.AsyncClient, roots: list[str], until: asyncio.Event) -> None:
    """Slow turns (a second each) in every family, one after another, until `until` is
    set: however long a backup takes on a loaded machine, the next one still finds a
    turn running."""

    async def one(root: str) -> None:
        i = 0
        while not until.is_set():
            await _turn(c, root, f"wait: 1; todo: round {i}")
            i += 1

    await asyncio.gather(*(one(root) for root in roots))


async def _a_turn_runs(c: httpx.AsyncClient, roots: list[str]) -> None:
    """Return once some family has a turn running (a backup taken then is mid-turn)."""
    async with asyncio.timeout(30):
        while True:
            for root in roots:
                h = (await c.get(f"/api/conversations/{root}/history")).json()
                if h["active_turn"] is not None:
                    return
            await asyncio.sleep(0.05)


async def _serves(env: dict[str, str], roots: list[str]) -> None:
    """The app started on the restored database answers every family's graph and
    history."""
    async with _in_process(env) as (_, c):
        for root in roots:
            graph = await c.get(f"/api/conversations/{root}/graph")
            history = await c.get(f"/api/conversations/{root}/history")
            assert graph.status_code == 200 and history.status_code == 200
            nodes = {n["id"] for n in graph.json()["nodes"]}
            assert {f"{root}:{k}" for k in (1, 2, 3)} <= nodes


def _assert_restored_clean(env: dict[str, str], roots: list[str]) -> dict[str, Any]:
    code, report = _check(env)
    assert code == 0, report["problems"]
    assert report["problems"] == []
    assert report["families_checked"] == len(roots)
    assert report["nodes_checked"] >= 4 * len(roots)
    return report


@asynccontextmanager
async def _busy_server(env: dict[str, str]) -> AsyncIterator[tuple[list[str], httpx.AsyncClient]]:
    server = Server(env)
    await server.start()
    try:
        async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:
            roots = [await _family(c) for _ in range(FAMILIES)]
            yield roots, c
    finally:
        await asyncio.to_thread(server.stop)


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
async def test_sqlite_backup_while_turns_run_restores_consistent(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    files = [tmp_path / f"backup-{i}.tar" for i in range(3)]
    async with _busy_server(server_env) as (roots, c):
        backed_up = asyncio.Event()
        turns = asyncio.create_task(_slow_turns(c, roots, backed_up))
        for file in files:
            await _a_turn_runs(c, roots)
            out = await asyncio.to_thread(run_cli, server_env, "backup", str(file))
            assert out.returncode == 0, out.stderr
        backed_up.set()
        await turns
    running_seen = 0
    for i, file in enumerate(files):
        env = {**server_env, "HAICO_DATA_DIR": str(tmp_path / f"restored-{i}")}
        out = await asyncio.to_thread(run_cli, env, "restore", str(file))
        assert out.returncode == 0, out.stderr
        report = await asyncio.to_thread(_assert_restored_clean, env, roots)
        running_seen += sum(p["kind"] == "running_turn" for p in report["in_progress"])
        print(
            f"\n[backup {i}] {json.dumps({k: v for k, v in report.items() if k != 'in_progress'})}"
        )
        # A second restore onto it is refused unless forced.
        again = await asyncio.to_thread(run_cli, env, "restore", str(file))
        assert again.returncode == 1 and "--force" in again.stderr
        forced = await asyncio.to_thread(run_cli, env, "restore", "--force", str(file))
        assert forced.returncode == 0, forced.stderr
    # The copies were taken while turns ran (not between them).
    assert running_seen > 0
    await _serves({**server_env, "HAICO_DATA_DIR": str(tmp_path / "restored-0")}, roots)


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
async def test_pg_dump_while_turns_run_restores_consistent(
    server_env: dict[str, str], tmp_path: Path
) -> None:
    pg_dump = shutil.which("pg_dump") or "/usr/bin/pg_dump"
    pg_restore = shutil.which("pg_restore") or "/usr/bin/pg_restore"
    source = server_env["HAICO_DATABASE_URL"]
    dump = tmp_path / "haico.dump"
    async with _busy_server(server_env) as (roots, c):
        out = await asyncio.to_thread(run_cli, server_env, "backup", str(tmp_path / "x.tar"))
        assert out.returncode == 2 and "pg_dump" in out.stderr
        dumped = asyncio.Event()
        turns = asyncio.create_task(_slow_turns(c, roots, dumped))
        await _a_turn_runs(c, roots)
        done = await asyncio.to_thread(
            subprocess.run, [pg_dump, "-Fc", "-f", str(dump), source], capture_output=True
        )
        assert done.returncode == 0, done.stderr
        assert not turns.done()  # the dump ran while turns did
        dumped.set()
        await turns
    name = f"test_restore_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        target = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
        done = await asyncio.to_thread(
            subprocess.run,
            [pg_restore, "--no-owner", "-d", target, str(dump)],
            capture_output=True,
        )
        assert done.returncode == 0, done.stderr
        env = {**server_env, "HAICO_DATABASE_URL": target}
        report = await asyncio.to_thread(_assert_restored_clean, env, roots)
        print(f"\n[pg_dump] {json.dumps({k: v for k, v in report.items() if k != 'in_progress'})}")
        await _serves(env, roots)
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


# ---- the check finds what is wrong ----


@asynccontextmanager
async def _in_process(env: dict[str, str]) -> AsyncIterator[tuple[FastAPI, httpx.AsyncClient]]:
    """The app in this process, on the test's own (migrated) database."""
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        secret_key="test-secret",
    )
    await asyncio.to_thread(migrate, settings, local_user=True)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            yield app, c


async def _corrupt(app: FastAPI, root: str, kind: str) -> tuple[str, str | None]:
    """Break the family one way; return the problem kind and the node or thread named."""
    async with db_of(app).transaction() as s:
        if kind == "snapshot":
            await s.execute(
                delete(WorkspaceSnapshot).where(
                    WorkspaceSnapshot.thread_id == root, WorkspaceSnapshot.turn_index == 2
                )
            )
            return "missing_snapshot", f"{root}:2"
        if kind == "head":
            await s.execute(
                update(ChatHead)
                .where(ChatHead.root_thread_id == root)
                .values(head_turn_id=f"{root}:9")
            )
            return "head", f"{root}:9"
        if kind == "clock":
            await s.execute(
                update(Conversation)
                .where(Conversation.thread_id == root)
                .values(turn_index=Conversation.turn_index + 1)
            )
            return "clock", f"{root}:4"
    if kind == "draft":
        return "orphan_draft", await add_branch_row(db_of(app), root, BranchStatus.DRAFT)
    assert kind == "checkpoint"
    orphan = new_thread_id()
    await app.state.runtime.seed(thread_id=orphan, messages=[HumanMessage("hi")], metadata={})
    return "orphan_checkpoint", orphan


async def _check_here(app: FastAPI) -> dict[str, Any]:
    """What `haico check` prints, from the service it runs (`consistency.check`), in
    this process: the command's own exit codes and output are tested with the janitor
    below and after every restore above."""
    max_age = app.state.settings.pending_max_age_seconds
    report = await consistency.check(db_of(app), app.state.runtime.store, max_age_seconds=max_age)
    return report.to_json()


@pytest.mark.parametrize("kind", ["snapshot", "head", "clock", "draft", "checkpoint"])
async def test_check_finds_each_kind_of_problem(server_env: dict[str, str], kind: str) -> None:
    async with _in_process(server_env) as (app, c):
        root = await _family(c)
        report = await _check_here(app)
        assert report["problems"] == [], report
        assert report["families_checked"] == 1 and report["nodes_checked"] == 4
        expected, named = await _corrupt(app, root, kind)
        report = await _check_here(app)
    found = [
        p
        for p in report["problems"]
        if p["kind"] == expected and named in (p["node"], p["thread_id"])
    ]
    assert found, report["problems"]
    assert all(p["reason"] and "\n" not in p["reason"] for p in report["problems"])


async def test_janitor_leaves_a_database_that_passes(server_env: dict[str, str]) -> None:
    async with _in_process(server_env) as (app, c):
        root = await _family(c)
        draft = await add_branch_row(db_of(app), root, BranchStatus.DRAFT)
        stale = await add_branch_row(db_of(app), root, BranchStatus.PENDING, age=timedelta(hours=1))
        young = await add_branch_row(db_of(app), root, BranchStatus.PENDING)
    code, report = await asyncio.to_thread(_check, server_env)
    assert code == 1
    kinds = {(p["kind"], p["thread_id"]) for p in report["problems"]}
    assert kinds == {("orphan_draft", draft), ("half_built", stale)}, report["problems"]
    assert [(p["kind"], p["thread_id"]) for p in report["in_progress"]] == [("half_built", young)]
    env = {**server_env, "PATH": os.environ.get("PATH", "")}
    out = await asyncio.to_thread(run_cli, env, "janitor")
    assert out.returncode == 0, out.stderr
    removed = json.loads(out.stdout)
    assert (removed["orphan_drafts"], removed["pending_branches"]) == ([draft], [stale])
    code, report = await asyncio.to_thread(_check, server_env)
    assert code == 0, report["problems"]
    assert [p["thread_id"] for p in report["in_progress"]] == [young]
