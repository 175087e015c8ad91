"""The researcher's reading of a study, on SQLite and PostgreSQL: the participants
table's counts on a hand-built study (a send off the head, a restore, a merge, a
replay), the metrics' mean and median per condition, the study CSV (its columns,
nothing that names a user or carries a token), who may read any of it, and that the
table and the metrics cost the same statements however many participants."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.services.reports.analysis_export import COLUMNS
from tests.helpers import db_of, recorded_sql
from tests.share_helpers import bearer, new_user
from tests.studies.reports_helpers import (
    API,
    add_member,
    add_person,
    as_caller,
    checkout,
    new_study,
    turn,
    working_thread,
)
from tests.whatif_helpers import wait_job


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    return {"auth": "token"}


def by_name(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["participant"]: r for r in rows}


async def test_counts_a_send_off_the_head_a_restore_a_merge_and_a_replay(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    study = await new_study(app, "graph", "linear")
    a = await add_person(app, client, study, "graph")
    b = await add_person(app, client, study, "linear")
    root = a.thread_id
    for content in ("objective: plan; todo: a", "todo: b", "todo: c"):
        await turn(client, a, content)
    await checkout(client, a, f"{root}:3")  # the head itself: no restore
    await checkout(client, a, f"{root}:1")  # a restore
    draft = await working_thread(client, a)
    await turn(client, a, "todo: d", draft)  # a send off the head: a branch
    merged = await client.post(
        f"{API}/{draft}/merge", json={"source": f"{root}:3", "mode": "merge"}, headers=a.headers
    )
    assert merged.status_code == 201, merged.text
    profile = await client.post(
        "/api/profiles", json={"name": "alt", "provider": "offline"}, headers=a.headers
    )
    assert profile.status_code == 201, profile.text
    job = await client.post(
        f"{API}/{root}/replay",
        json={"from_node": f"{root}:1", "to_node": f"{root}:2", "profile_id": profile.json()["id"]},
        headers=a.headers,
    )
    assert job.status_code == 202, job.text
    async with as_caller(app, a.headers) as mine:
        done = await wait_job(mine, job.json()["id"])
    assert len(done["thread_ids"]) == 1
    await checkout(client, a, f"{root}:3")  # back to the root's tip: a second restore
    for content in ("objective: read", "todo: x"):
        await turn(client, b, content)

    r = await client.get(f"/api/studies/{study.id}/participants", headers=study.owner_h)
    assert r.status_code == 200, r.text
    rows = r.json()
    assert [row["participant"] for row in rows] == ["P001", "P002"]
    got = by_name(rows)
    counts = ("turns", "branches", "restores", "merges", "alternatives")
    assert {k: got["P001"][k] for k in counts} == {
        "turns": 4,  # 3 on the root, 1 on the branch; the replay's 2 steps not counted
        "branches": 2,  # the send off the head and the replay's branch
        "restores": 2,
        "merges": 1,
        "alternatives": 1,
    }
    assert {k: got["P002"][k] for k in counts} == dict.fromkeys(counts, 0) | {"turns": 2}
    assert got["P001"]["condition"] == "graph" and got["P002"]["condition"] == "linear"
    assert got["P001"]["thread_id"] == root and got["P001"]["state"] == "joined"
    assert got["P001"]["last_active_at"] >= got["P001"]["joined_at"]


async def test_metrics_give_mean_and_median_per_condition(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    study = await new_study(app, "graph", "linear", "nobody")
    t0 = datetime(2026, 1, 1, 9, tzinfo=UTC)
    for n, seconds in ((1, 60), (2, 120), (6, 300)):
        person = await add_person(
            app,
            client,
            study,
            "graph",
            state="finished",
            joined_at=t0,
            consented_at=t0 + timedelta(seconds=10),
            finished_at=t0 + timedelta(seconds=10 + seconds),
        )
        for k in range(n):
            await turn(client, person, f"todo: t{k}")
    await add_person(app, client, study, "linear")

    r = await client.get(f"/api/studies/{study.id}/metrics", headers=study.owner_h)
    assert r.status_code == 200, r.text
    graph, linear, nobody = r.json()["conditions"]
    assert (graph["condition"], graph["participants"], graph["finished"]) == ("graph", 3, 3)
    assert graph["turns"] == {"mean": 3.0, "median": 2.0}
    assert graph["time_on_task_s"] == {"mean": 160.0, "median": 120.0}
    assert graph["restores"] == {"mean": 0.0, "median": 0.0}
    assert graph["output_tokens"]["mean"] > 0
    assert (linear["participants"], linear["finished"]) == (1, 0)
    assert linear["turns"] == {"mean": 0.0, "median": 0.0}
    assert nobody["participants"] == 0 and nobody["turns"] == {"mean": None, "median": None}


async def test_the_study_csv_puts_participant_and_condition_first_and_names_nobody(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    study = await new_study(app, "graph", "linear")
    a = await add_person(app, client, study, "graph")
    b = await add_person(app, client, study, "linear")
    await turn(client, a, "objective: plan")
    await turn(client, a, "=HYPERLINK(1)")
    await turn(client, b, "todo: x")
    note = await client.post(
        f"{API}/{a.thread_id}/nodes/1/notes", json={"text": "by the owner"}, headers=a.headers
    )
    assert note.status_code == 201, note.text

    r = await client.get(f"/api/studies/{study.id}/export.csv", headers=study.owner_h)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/csv")
    rows = list(csv.reader(io.StringIO(r.text)))
    assert rows[0] == ["participant", "condition", *COLUMNS]
    body = [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]
    assert [(x["participant"], x["condition"], x["label"]) for x in body] == [
        ("P001", "graph", "1"),
        ("P001", "graph", "2"),
        ("P002", "linear", "1"),
    ]
    assert body[1]["user_message"] == "'=HYPERLINK(1)"  # spreadsheet-safe
    names = [study.owner.name, *(p.user.name for p in study.people)]
    for secret in (*names, *study.tokens):
        assert secret not in r.text


async def test_only_the_owner_and_members_read_a_study(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    study = await new_study(app, "graph")
    person = await add_person(app, client, study, "graph")
    await turn(client, person, "todo: x")
    viewer = await add_member(app, study, "viewer")
    coder = await add_member(app, study, "coder")
    _, stranger = await new_user(app, "stranger")
    link = await client.post(
        f"{API}/{person.thread_id}/shares", json={"role": "viewer"}, headers=person.headers
    )
    link_h = bearer(link.json()["token"])
    paths = [f"/api/studies/{study.id}/{p}" for p in ("participants", "metrics", "export.csv")]
    for path in paths:
        for member in (viewer, coder):
            assert (await client.get(path, headers=member)).status_code == 200, path
        refused = await client.get(path, headers=stranger)
        assert refused.status_code == 404, path
        assert study.id not in refused.text and "hand-built" not in refused.text
        assert (await client.get(path, headers=link_h)).status_code == 403, path
        assert (await client.get(path)).status_code == 401, path
    events = await client.get(f"/api/studies/{study.id}/events", headers=stranger)
    assert events.status_code == 404
    missing = await client.get("/api/studies/sy_nothing/participants", headers=study.owner_h)
    assert missing.status_code == 404
    # A participant (joined by the study's link) reaches its own family only.
    joined = await client.post("/api/studies/join", json={"token": study.tokens[1]})
    assert joined.status_code == 201, joined.text
    participant_h = bearer(joined.json()["token"])
    for path in [*paths, f"/api/studies/{study.id}/events"]:
        assert (await client.get(path, headers=participant_h)).status_code == 403, path


async def test_the_table_and_the_metrics_cost_the_same_queries_for_any_number_of_people(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    study = await new_study(app, "graph", "linear")
    db = db_of(app)

    async def statements() -> tuple[int, int]:
        counts = []
        for route in ("participants", "metrics"):
            with recorded_sql(db) as sql:
                r = await client.get(f"/api/studies/{study.id}/{route}", headers=study.owner_h)
                assert r.status_code == 200, r.text
            # (the study's own statements: the bus's pump reads the log meanwhile)
            counts.append(len([s for s in sql if "study_participants" in s or "FROM studies" in s]))
        return counts[0], counts[1]

    person = await add_person(app, client, study, "graph")
    await turn(client, person, "todo: a")
    one = await statements()
    for condition in ("linear", "graph", "linear"):
        person = await add_person(app, client, study, condition)
        await turn(client, person, "todo: a")
        await turn(client, person, "todo: b")
    assert await statements() == one
    assert one[0] >= 5  # the study, then its families' threads, tokens, replays, moves, people
