"""`haico share THREAD (--user NAME | --link)`, run as the real console script against a
fresh SQLite database; the share is then used through the real API on that database
(the service behind it is tested on both backends in tests/sharing/test_shares.py)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from haico.config import Settings
from haico.main import create_app
from tests.ledger.test_research_cli import haico

pytestmark = pytest.mark.parametrize("backend", ["sqlite"], indirect=True)


async def test_share_from_the_command_line(server_env: dict[str, str]) -> None:
    env = {**server_env, "HAICO_SECRET_KEY": "test-secret", "HAICO_AUTH": "token"}
    assert (await haico(env, "migrate")).returncode == 0
    owner = (await haico(env, "users", "create", "olga")).stdout.strip().splitlines()[-1]
    guest = (await haico(env, "users", "create", "gus")).stdout.strip().splitlines()[-1]
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        secret_key="test-secret",
        auth="token",
    )
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            r = await c.post(
                "/api/conversations",
                json={"title": "t"},
                headers={"Authorization": f"Bearer {owner}"},
            )
            tid = r.json()["thread_id"]

            done = await haico(env, "share", tid, "--user", "gus", "--role", "commenter")
            assert done.returncode == 0, done.stderr
            made = json.loads(done.stdout)
            assert (made["user"], made["role"], made["token"]) == ("gus", "commenter", None)
            shared = await c.get(
                "/api/conversations?shared=true", headers={"Authorization": f"Bearer {guest}"}
            )
            assert [(x["thread_id"], x["role"]) for x in shared.json()] == [(tid, "commenter")]

            done = await haico(env, "share", tid, "--link")
            assert done.returncode == 0, done.stderr
            link = json.loads(done.stdout)
            assert link["token"].startswith("sh_") and link["role"] == "viewer"
            r = await c.get(f"/api/conversations/{tid}", params={"share": link["token"]})
            assert r.status_code == 200

            done = await haico(env, "share", tid, "--link", "--role", "editor")
            assert done.returncode == 1 and "invalid_input" in done.stderr
            done = await haico(env, "share", tid, "--user", "gus", "--expires", "soon")
            assert done.returncode == 2
    none = await haico({**env, "HAICO_AUTH": "none"}, "share", tid, "--link")
    assert none.returncode == 1 and "sharing_needs_token_auth" in none.stderr
