"""`haico study create | list | export`, run as processes on the test's database
(SQLite and PostgreSQL): a study made from a file and from flags, listed for its
owner, and its CSV the same as `GET /api/studies/{id}/export.csv`."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from haico.cli.schema import migrate
from haico.config import Settings
from haico.main import create_app
from tests.helpers import run_cli
from tests.share_helpers import bearer


async def test_create_list_and_export_a_study(server_env: dict[str, str], tmp_path: Path) -> None:
    env = {**server_env, "HAICO_SECRET_KEY": "test-secret", "HAICO_AUTH": "token"}
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        secret_key="test-secret",
        auth="token",
    )
    await asyncio.to_thread(migrate, settings)
    made = await asyncio.to_thread(run_cli, env, "users", "create", "olivia")
    assert made.returncode == 0, made.stderr
    ada = bearer(made.stdout.strip().splitlines()[-1])

    spec = tmp_path / "study.json"
    spec.write_text(
        json.dumps(
            {
                "name": "Essay study",
                "task": {"objective": "write an essay", "todos": ["outline"]},
                "conditions": [
                    {"name": "branching"},
                    {"name": "linear", "features": {"graph": False, "branching": False}},
                ],
                "consent": "I agree.",
            }
        )
    )
    done = await asyncio.to_thread(
        run_cli, env, "study", "create", "--owner", "olivia", "--file", str(spec)
    )
    assert done.returncode == 0, done.stderr
    study = json.loads(done.stdout)
    assert study["join_token"].startswith("st_")
    assert [c["name"] for c in study["conditions"]] == ["branching", "linear"]
    flags = await asyncio.to_thread(
        run_cli, env, "study", "create", "--owner", "olivia", "--name", "Pilot", "--condition", "a"
    )
    assert flags.returncode == 0, flags.stderr
    pilot = json.loads(flags.stdout)

    listed = await asyncio.to_thread(run_cli, env, "study", "list", "--owner", "olivia")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.strip().splitlines()
    assert lines[0] == "id\tstate\tparticipants\tname"
    assert sorted(lines[1:]) == sorted(
        [f"{study['id']}\topen\t0\tEssay study", f"{pilot['id']}\topen\t0\tPilot"]
    )

    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            for text in ("objective: first", "todo: second"):
                joined = await c.post("/api/studies/join", json={"token": study["join_token"]})
                assert joined.status_code == 201, joined.text
                me = joined.json()
                pt = bearer(me["token"])
                assert (await c.post("/api/studies/participants/me/consent", headers=pt)).is_success
                r = await c.post(
                    f"/api/conversations/{me['thread_id']}/turns",
                    json={"content": text},
                    headers=pt,
                )
                assert r.status_code == 200, r.text
            served = await c.get(f"/api/studies/{study['id']}/export.csv", headers=ada)
            assert served.status_code == 200, served.text

    out = tmp_path / "study.csv"
    done = await asyncio.to_thread(run_cli, env, "study", "export", study["id"], "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert out.read_bytes() == served.content
    assert out.read_bytes().count(b"\r\n") == 3  # the header and one step each
    # (a name with letters a hex id cannot hold: the ids in the CSV never match it)
    assert "olivia" not in out.read_text()

    missing = await asyncio.to_thread(run_cli, env, "study", "export", "sy_none", "--out", str(out))
    assert missing.returncode == 1 and "not_found" in missing.stderr
    usage = await asyncio.to_thread(run_cli, env, "study", "create", "--owner", "olivia")
    assert usage.returncode == 2 and "--condition" in usage.stderr


async def test_studies_need_token_auth(server_env: dict[str, str]) -> None:
    done = await asyncio.to_thread(run_cli, server_env, "study", "list", "--owner", "olivia")
    assert done.returncode == 1 and "studies_need_token_auth" in done.stderr
