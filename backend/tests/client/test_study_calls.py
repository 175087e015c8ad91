"""Studies through `haico.client` against a live `haico serve` in token mode, on SQLite
and on PostgreSQL: the researcher makes a study and adds a member; a participant joins
by the link with no credential, consents, works and finishes; the researcher reads the
participants table, the figures and the CSV; a closed study refuses a join by code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from haico.cli.schema import migrate
from haico.client import Client, HaicoError
from haico.config import Settings
from tests.helpers import run_cli
from tests.server import Server

OWNER = "ada-researcher"


def study_session(url: str, ada: str) -> None:
    with Client(url, token=ada) as owner:
        made = owner.create_study(
            "Essays",
            [{"name": "branching"}, {"name": "linear", "features": {"branching": False}}],
            task={"objective": "write an essay"},
            consent="I agree.",
        )
        assert made.join_token is not None and made.join_token.startswith("st_")
        assert [s.id for s in owner.studies()] == [made.id]
        with pytest.raises(HaicoError) as none:
            owner.add_member(made.id, "nobody", "coder")
        assert none.value.status in (404, 422)

        joined = Client(url).join(made.join_token)
        assert (joined.participant, joined.condition.name) == ("P001", "branching")
        with Client(url, token=joined.token) as p:
            assert p.me().state == "joined"
            with pytest.raises(HaicoError) as early:
                p.say(joined.thread_id, "objective: too early")
            assert early.value.code == "consent_required"
            assert p.consent().state == "consented"
            p.say(joined.thread_id, "objective: my essay")
            assert p.finish().state == "finished"
            with pytest.raises(HaicoError) as other:
                p.studies()
            assert other.value.status == 403

        rows = owner.participants(made.id)
        assert [(r.participant, r.condition, r.state, r.turns) for r in rows] == [
            ("P001", "branching", "finished", 1)
        ]
        figures = {c.condition: c for c in owner.study_metrics(made.id).conditions}
        assert figures["branching"].participants == 1 and figures["linear"].participants == 0
        csv = owner.study_csv(made.id)
        assert csv.splitlines()[0].startswith("participant,condition,")
        assert "P001" in csv and OWNER not in csv and ada not in csv and joined.token not in csv

        assert owner.edit_study(made.id, state="closed").state == "closed"
        with pytest.raises(HaicoError) as closed:
            Client(url).join(made.join_token)
        assert (closed.value.status, closed.value.code) == (403, "study_closed")


async def test_a_study_through_the_client(server_env: dict[str, str]) -> None:
    env = {**server_env, "HAICO_SECRET_KEY": "test-secret", "HAICO_AUTH": "token"}
    settings = Settings(
        database_url=env.get("HAICO_DATABASE_URL"),
        data_dir=Path(env["HAICO_DATA_DIR"]),
        secret_key="test-secret",
        auth="token",
    )
    await asyncio.to_thread(migrate, settings)
    made = await asyncio.to_thread(run_cli, env, "users", "create", OWNER)
    assert made.returncode == 0, made.stderr
    token = made.stdout.strip().splitlines()[-1]
    server = Server(env)
    await server.start()
    try:
        await asyncio.to_thread(study_session, server.url, token)
    finally:
        server.stop()
