"""Artifacts have a stable uid: the upgrade gives existing rows one (copies of one
artifact share it), branches, forks, merges and export/import keep it, and a merge
matches artifacts by it: merging the same source twice brings nothing, two artifacts
with the same content are two artifacts, and one edited on both sides is a conflict.
On SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import create_async_engine

from alembic import command
from haico.cli.schema import alembic_config
from haico.config import Settings
from haico.services.merge.plan import EMPTY, ArtifactRef, Side, artifact_key, plan
from haico.services.merge.result import Unresolved, merge_result
from tests.db.test_migrations import empty_db_url  # noqa: F401  (the fixture)
from tests.history_helpers import checkout, new_thread, turn_ok, workspace
from tests.merge.test_merge_api import branch, merge, merged

API = "/api/conversations"


def uids(ws: dict[str, Any]) -> list[tuple[str, str]]:
    return [(a["title"], a["uid"]) for a in ws["artifacts"]]


async def test_copies_keep_the_uid_and_a_merge_matches_by_it(client: httpx.AsyncClient) -> None:
    root = await new_thread(client)
    await turn_ok(client, root, "artifact Notes: what we found")
    ((_, made),) = uids(await workspace(client, root))
    assert len(made) == 32
    side = await branch(client, root, 1)
    assert uids(await workspace(client, side)) == [("Notes", made)]  # a branch's copy
    # the same title and body made again is another artifact, with its own uid
    await turn_ok(client, side, "artifact Notes: what we found")
    await turn_ok(client, side, "artifact Plan: next steps")
    on_side = uids(await workspace(client, side))
    assert [t for t, _ in on_side] == ["Notes", "Notes", "Plan"] and len(set(on_side)) == 3

    await checkout(client, root, f"{root}:1")
    out = await merged(client, root, f"{side}:3")
    assert sorted(c["uid"] for c in out["plan"]["changes"]) == sorted(u for _, u in on_side[1:])
    assert uids(await workspace(client, root)) == on_side  # copied with their uids
    again = await merge(client, root, f"{side}:3")
    assert again.status_code == 422 and again.json()["code"] == "nothing_to_merge", again.text
    # each merged copy is stamped with the merge's turn; its content came along
    ws = await workspace(client, root)
    assert [a["turn_index"] for a in ws["artifacts"]] == [1, 2, 2]
    got = await client.get(f"{API}/{root}/artifacts/{ws['artifacts'][2]['id']}")
    assert got.json()["content"] == "next steps" and got.json()["uid"] == on_side[2][1]

    # a fork and an export/import keep them too
    fork = await client.post(f"{API}/{root}/fork", json={"from_turn": 2})
    assert fork.status_code == 201, fork.text
    assert uids(await workspace(client, fork.json()["thread_id"])) == on_side
    doc = (await client.get(f"{API}/{root}/export")).json()
    assert [a["uid"] for a in doc["threads"][0]["artifacts"]] == [u for _, u in on_side]
    copy = await client.post(f"{API}/import", json=doc)
    assert copy.status_code == 201, copy.text
    assert uids(await workspace(client, copy.json()["thread_id"])) == on_side
    # a document from before artifacts had uids gets the upgrade's digest
    for t in doc["threads"]:
        for a in t["artifacts"]:
            del a["uid"]
        for ref in t["workspace"]["artifacts"]:
            ref.pop("uid", None)
    old = await client.post(f"{API}/import", json=doc)
    assert old.status_code == 201, old.text
    digests = [artifact_key("text", t, b) for t, b in [("Notes", "what we found")] * 2]
    digests.append(artifact_key("text", "Plan", "next steps"))
    assert [u for _, u in uids(await workspace(client, old.json()["thread_id"]))] == digests


def art(uid: str, body: str, title: str = "Notes") -> ArtifactRef:
    return ArtifactRef(uid, "text", title, None, artifact_key("text", title, body))


def test_an_artifact_edited_on_both_sides_is_a_conflict() -> None:
    base = Side(artifacts=(art("a1", "v1"),))
    ours = Side(artifacts=(art("a1", "ours"),))
    theirs = Side(artifacts=(art("a1", "theirs"),))
    (change,) = plan(base, ours, theirs).changes
    assert (change.id, change.kind, change.conflict) == ("artifact:a1", "change", True)
    assert change.fields == ("digest",)
    with pytest.raises(Unresolved):
        merge_result(plan(base, ours, theirs), ours, theirs, {})
    kept = merge_result(plan(base, ours, theirs), ours, theirs, {"artifact:a1": "ours"})
    assert kept.side.artifacts == ours.artifacts and kept.brought == []
    took = merge_result(plan(base, ours, theirs), ours, theirs, {"artifact:a1": "theirs"})
    assert took.side.artifacts == (*ours.artifacts, *theirs.artifacts)  # theirs' version added
    # only theirs edited it: a clean change; only ours: nothing; no base: a conflict
    assert [(c.kind, c.conflict) for c in plan(base, base, theirs).changes] == [("change", False)]
    assert plan(base, ours, base).changes == ()
    assert [c.conflict for c in plan(EMPTY, ours, theirs).changes] == [True]
    # the same uid with the same content is the same artifact, whatever its row
    assert (
        plan(EMPTY, Side(artifacts=(art("a1", "x"),)), Side(artifacts=(art("a1", "x"),))).changes
        == ()
    )
    # two uids with one content are two artifacts
    two = Side(artifacts=(art("a1", "x"), art("a2", "x")))
    assert [c.uid for c in plan(EMPTY, Side(artifacts=(art("a1", "x"),)), two).changes] == ["a2"]


async def test_the_upgrade_gives_existing_artifacts_uids(
    empty_db_url: str | None,  # noqa: F811
    tmp_path: Path,
) -> None:
    """Rows written before uids: copies of one artifact (same kind, title and body, as
    a branch copies them) share a uid; different artifacts get different ones."""
    settings = Settings(database_url=empty_db_url, data_dir=tmp_path / "d")
    settings.data_dir.mkdir(parents=True)
    cfg = alembic_config(settings)
    await asyncio.to_thread(command.upgrade, cfg, "0012")  # type: ignore[arg-type]
    engine = create_async_engine(settings.sql_url)
    rows = [
        "INSERT INTO users (id, name) VALUES (7, 'old')",
        *(
            "INSERT INTO conversations (thread_id, user_id, root_thread_id, title, turn_index, "
            f"message_count, building) VALUES ('{t}', 7, 'th_a', 't', 1, 2, false)"
            for t in ("th_a", "th_b")
        ),
        *(
            f"INSERT INTO artifacts (thread_id, turn_index, kind, title, content) VALUES "
            f"('{t}', 1, 'text', '{title}', '{body}')"
            for t, title, body in (
                ("th_a", "Notes", "found"),
                ("th_b", "Notes", "found"),
                ("th_b", "Plan", "it's next"),
            )
        ),
    ]
    async with engine.begin() as conn:
        for sql in rows:
            await conn.execute(text(sql.replace("it's", "it''s")))
    await asyncio.to_thread(command.upgrade, cfg, "head")  # type: ignore[arg-type]
    async with engine.connect() as conn:
        found = (await conn.execute(text("SELECT uid FROM artifacts ORDER BY id"))).scalars().all()
    await engine.dispose()

    def digest(title: str, body: str) -> str:
        return hashlib.sha256(f"text\x00{title}\x00{body}".encode()).hexdigest()[:32]

    assert found == [
        digest("Notes", "found"),
        digest("Notes", "found"),
        digest("Plan", "it's next"),
    ]
