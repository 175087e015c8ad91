"""`haico users list | token NAME --rotate | delete NAME`, run as the real console script
against a fresh database (SQLite and PostgreSQL), checked through the real API in token
mode (`HAICO_AUTH=token`)."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.config import Settings
from haico.db.models import ApiToken, Conversation, User
from haico.main import create_app
from tests.helpers import db_of
from tests.sse_client import send_turn

HAICO = Path(sys.executable).parent / "haico"
RFC3339_UTC = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


@pytest.fixture
def env(server_env: dict[str, str]) -> dict[str, str]:
    """A fresh database (see `server_env`) in token mode."""
    return {**server_env, "HAICO_AUTH": "token", "HAICO_SECRET_KEY": "test-secret"}


async def haico(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """Run `haico users ARGS…` (off the event loop, so the app under test keeps serving)."""
    return await asyncio.to_thread(
        subprocess.run,
        [str(HAICO), "users", *args],
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=180,
    )


async def new_token(env: dict[str, str], *args: str) -> str:
    """Run a command that prints a token alone on its last line; that token."""
    done = await haico(env, *args)
    assert done.returncode == 0, done.stderr
    token = done.stdout.strip().splitlines()[-1]
    assert token.startswith("hk_") and " " not in token
    return token


async def list_users(env: dict[str, str]) -> dict[str, tuple[str, int]]:
    done = await haico(env, "list")
    assert done.returncode == 0, done.stderr
    header, *lines = done.stdout.strip().splitlines()
    assert header.split("\t") == ["NAME", "CREATED", "TOKENS"]
    rows: dict[str, tuple[str, int]] = {}
    for line in lines:
        name, created, tokens = line.split("\t")
        assert RFC3339_UTC.match(created), created
        rows[name] = (created, int(tokens))
    return rows


@asynccontextmanager
async def api(env: dict[str, str]) -> AsyncIterator[FastAPI]:
    """The real app on the CLI's database, in token mode."""
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        auth="token",
        secret_key="test-secret",
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        yield app


@asynccontextmanager
async def client_for(app: FastAPI, token: str) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(
        transport=transport,
        base_url="http://haico.test",
        headers={"Authorization": f"Bearer {token}"},
    ) as c:
        yield c


async def status_of(app: FastAPI, token: str) -> int:
    async with client_for(app, token) as c:
        return (await c.get("/api/conversations")).status_code


async def test_list_shows_users_without_secrets(env: dict[str, str]) -> None:
    alice = await new_token(env, "create", "alice")
    bob_old = await new_token(env, "create", "bob smith")
    bob = await new_token(env, "token", "bob smith", "--rotate")
    done = await haico(env, "list")
    assert done.returncode == 0
    for secret in (alice, bob_old, bob, "hk_"):
        assert secret not in done.stdout and secret not in done.stderr
    rows = await list_users(env)
    assert list(rows) == ["alice", "bob smith"]
    assert rows["alice"][1] == 1 and rows["bob smith"][1] == 1
    async with api(env) as app:
        # The listed users are the ones the API knows, by the tokens printed once.
        assert await status_of(app, alice) == 200
        assert await status_of(app, bob) == 200
        assert await status_of(app, bob_old) == 401


async def test_rotate_prints_a_working_token_and_the_old_one_stops_working(
    env: dict[str, str],
) -> None:
    old = await new_token(env, "create", "alice")
    async with api(env) as app:
        async with client_for(app, old) as c:
            tid = (await c.post("/api/conversations", json={"title": "mine"})).json()["thread_id"]
            status, _, _ = await send_turn(c, tid, "todo: keep me")
            assert status == 200

        done = await haico(env, "token", "alice", "--rotate")
        assert done.returncode == 0, done.stderr
        new = done.stdout.strip().splitlines()[-1]
        assert new.startswith("hk_") and new != old
        assert "1 earlier token(s) revoked" in done.stdout

        async with client_for(app, old) as c:
            r = await c.get("/api/conversations")
            assert r.status_code == 401 and r.json()["code"] == "unauthorized"
            assert (await c.get(f"/api/conversations/{tid}/workspace")).status_code == 401
        async with client_for(app, new) as c:
            r = await c.get("/api/conversations")
            assert r.status_code == 200
            assert tid in [conv["thread_id"] for conv in r.json()]
            ws = (await c.get(f"/api/conversations/{tid}/workspace")).json()
            assert [t["text"] for t in ws["todos"]] == ["keep me"]
            status, _, _ = await send_turn(c, tid, "todo: still mine")
            assert status == 200

        newest = await new_token(env, "token", "alice", "--rotate")
        assert await status_of(app, new) == 401
        assert await status_of(app, old) == 401
        assert await status_of(app, newest) == 200
    assert (await list_users(env))["alice"][1] == 1


async def test_delete_revokes_the_tokens_and_removes_the_user_and_its_conversations(
    env: dict[str, str],
) -> None:
    alice = await new_token(env, "create", "alice")
    bob = await new_token(env, "create", "bob")
    async with api(env) as app:
        async with client_for(app, alice) as c:
            tid = (await c.post("/api/conversations", json={"title": "a"})).json()["thread_id"]
            for text in ("objective: go", "todo: one", "prefer: short"):
                assert (await send_turn(c, tid, text))[0] == 200
            branch = await c.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1})
            assert branch.status_code in (200, 201), branch.text
        async with client_for(app, bob) as c:
            bob_tid = (await c.post("/api/conversations", json={"title": "b"})).json()["thread_id"]
            assert (await send_turn(c, bob_tid, "todo: bob's"))[0] == 200
        runtime = app.state.runtime
        assert await runtime.raw_messages(tid)

        done = await haico(env, "delete", "alice")
        assert done.returncode == 0, done.stderr
        assert "deleted user alice" in done.stdout

        async with client_for(app, alice) as c:
            assert (await c.get("/api/conversations")).status_code == 401
            assert (await c.get(f"/api/conversations/{tid}")).status_code == 401
        # The rows went with the user (ON DELETE CASCADE), and the transcript too.
        async with db_of(app).read() as s:
            assert (await s.execute(select(User).where(User.name == "alice"))).first() is None
            assert (await s.execute(select(func.count(ApiToken.id)))).scalar_one() == 1
            owners = (await s.execute(select(Conversation.thread_id))).scalars().all()
            assert tid not in owners and bob_tid in owners
        assert await runtime.raw_messages(tid) == []
        # Bob is untouched.
        async with client_for(app, bob) as c:
            r = await c.get("/api/conversations")
            assert r.status_code == 200
            assert [conv["thread_id"] for conv in r.json()] == [bob_tid]
            ws = (await c.get(f"/api/conversations/{bob_tid}/workspace")).json()
            assert [t["text"] for t in ws["todos"]] == ["bob's"]
    assert list(await list_users(env)) == ["bob"]


async def test_an_unknown_user_is_a_clear_error(env: dict[str, str]) -> None:
    await new_token(env, "create", "alice")
    for args in (("token", "zed", "--rotate"), ("delete", "zed")):
        done = await haico(env, *args)
        assert done.returncode == 1
        assert done.stderr.strip().splitlines()[-1] == "error: no user named 'zed'"
        assert done.stdout == ""
    # Without --rotate nothing changes: a token cannot be shown again.
    done = await haico(env, "token", "alice")
    assert done.returncode == 2 and "--rotate" in done.stderr and "hk_" not in done.stdout
    done = await haico(env, "create", "alice")
    assert done.returncode == 1 and "already exists" in done.stderr
    assert (await list_users(env))["alice"][1] == 1
