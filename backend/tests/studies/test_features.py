"""A condition's switches, enforced by the server on every path that could break them:
with `branching` off no checkout to another step, no send anywhere but the head, no
branch, no fork; with `merge` off no merge or pick (preview included); with `whatif`
off no replay. The same paths work where the condition leaves them on. AHP holds the
same rules (`test_ahp.py`)."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
from fastapi import FastAPI

from haico.services.history import branching
from haico.services.studies import joining
from tests.helpers import db_of
from tests.studies.kit import LINEAR, Joined, join, make_study, owner, send

ALL_ON = {"graph": True, "branching": True, "merge": True, "whatif": True}


async def _working(
    app: FastAPI, client: httpx.AsyncClient, conditions: list[dict[str, Any]]
) -> Joined:
    """A participant of a one-condition study, two turns into its family."""
    study = await make_study(client, await owner(app), conditions=conditions)
    p = await join(client, study)
    for content in ("todo: one", "todo: two"):
        r = await send(client, p.thread_id, content, p.h)
        assert r.status_code == 200, r.text
    return p


def _off(r: httpx.Response) -> None:
    assert r.status_code == 403, r.text
    assert r.json()["code"] == "feature_off", r.text


async def _head(client: httpx.AsyncClient, p: Joined) -> str | None:
    r = await client.get(f"/api/conversations/{p.thread_id}/history", headers=p.h)
    head: str | None = r.json()["head_turn_id"]
    return head


async def test_linear_refuses_every_way_off_the_head(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    p = await _working(app, client, [{"name": "linear", "features": LINEAR}])
    tid = p.thread_id
    c = f"/api/conversations/{tid}"
    # Checkout of an older step, of the baseline: refused, the head stays.
    _off(await client.post(f"{c}/checkout", json={"turn_id": f"{tid}:1"}, headers=p.h))
    _off(await client.post(f"{c}/checkout", json={"turn_id": None}, headers=p.h))
    assert await _head(client, p) == f"{tid}:2"
    # The head itself is no move at all.
    r = await client.post(f"{c}/checkout", json={"turn_id": f"{tid}:2"}, headers=p.h)
    assert r.status_code == 200, r.text
    # A branch (at any step, with a workspace or not): refused; a fork: refused.
    _off(await client.post(f"{c}/branch", json={"from_turn": 1}, headers=p.h))
    _off(await client.post(f"{c}/branch", json={"from_turn": 2}, headers=p.h))
    r = await client.post(f"{c}/fork", json={"from_turn": 1}, headers=p.h)
    assert r.status_code == 403
    # Merge and pick, preview or not: refused.
    for mode in ("merge", "pick"):
        for preview in (True, False):
            body = {"source": f"{tid}:1", "mode": mode, "preview": preview}
            _off(await client.post(f"{c}/merge", json=body, headers=p.h))
    # Replay (alternatives): refused.
    body = {"from_node": f"{tid}:1", "to_node": f"{tid}:1", "profile_id": "default"}
    _off(await client.post(f"{c}/replay", json=body, headers=p.h))
    # Still one thread, the head where it was; a send at the head goes on.
    graph = (await client.get(f"{c}/graph", headers=p.h)).json()
    assert len(graph["threads"]) == 1
    assert (await send(client, tid, "todo: three", p.h)).status_code == 200
    assert await _head(client, p) == f"{tid}:3"


async def test_a_send_off_the_head_is_refused_when_branching_is_off(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    """A family with a second thread (a replay's, which `whatif` allows): a send on the
    thread that is not the working one would move off the head: refused."""
    p = await _working(app, client, [{"name": "whatif", "features": {**LINEAR, "whatif": True}}])
    principal = await joining.authenticate(db_of(app), token=p.token)
    other = await branching.create_branch(
        db_of(app),
        app.state.handles.runtime,
        principal=principal,
        thread_id=p.thread_id,
        from_turn=1,
        replay=True,
    )
    before = await _head(client, p)
    _off(await send(client, other.thread_id, "todo: there", p.h))
    assert await _head(client, p) == before
    assert (await send(client, p.thread_id, "todo: here", p.h)).status_code == 200


async def test_a_replay_runs_where_whatif_is_on_and_branching_off(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    p = await _working(app, client, [{"name": "whatif", "features": {**LINEAR, "whatif": True}}])
    tid = p.thread_id
    body = {"from_node": f"{tid}:1", "to_node": f"{tid}:2", "profile_id": "default"}
    r = await client.post(f"/api/conversations/{tid}/replay", json=body, headers=p.h)
    assert r.status_code == 202, r.text
    job = r.json()
    for _ in range(200):
        job = (await client.get(f"/api/jobs/{job['id']}", headers=p.h)).json()
        if job["state"] not in ("queued", "running"):
            break
        await asyncio.sleep(0.05)
    assert job["state"] == "done", job
    assert len(job["thread_ids"]) == 1
    # Merge stays off in that condition.
    _off(
        await client.post(
            f"/api/conversations/{tid}/merge",
            json={"source": f"{job['thread_ids'][0]}:2", "mode": "pick", "preview": True},
            headers=p.h,
        )
    )


async def test_the_same_paths_work_where_the_condition_allows(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    p = await _working(app, client, [{"name": "free", "features": ALL_ON}])
    tid = p.thread_id
    c = f"/api/conversations/{tid}"
    r = await client.post(f"{c}/checkout", json={"turn_id": f"{tid}:1"}, headers=p.h)
    assert r.status_code == 200, r.text
    # A send from the restored step: a new branch.
    assert (
        await send(client, r.json()["working_thread_id"], "todo: other", p.h)
    ).status_code == 200
    r = await client.post(f"{c}/branch", json={"from_turn": 1}, headers=p.h)
    assert r.status_code == 201, r.text
    body = {"source": f"{tid}:2", "mode": "pick", "preview": True}
    r = await client.post(
        f"/api/conversations/{r.json()['thread_id']}/merge", json=body, headers=p.h
    )
    assert r.status_code == 200, r.text


async def test_a_switch_turned_off_alone_refuses_only_itself(
    app: FastAPI, client: httpx.AsyncClient
) -> None:
    p = await _working(app, client, [{"name": "no merge", "features": {**ALL_ON, "merge": False}}])
    tid = p.thread_id
    c = f"/api/conversations/{tid}"
    _off(
        await client.post(
            f"{c}/merge", json={"source": f"{tid}:1", "mode": "merge", "preview": True}, headers=p.h
        )
    )
    assert (
        await client.post(f"{c}/checkout", json={"turn_id": f"{tid}:1"}, headers=p.h)
    ).status_code == 200
    q = await _working(
        app, client, [{"name": "no whatif", "features": {**ALL_ON, "whatif": False}}]
    )
    body = {"from_node": f"{q.thread_id}:1", "to_node": f"{q.thread_id}:1", "profile_id": "default"}
    _off(await client.post(f"/api/conversations/{q.thread_id}/replay", json=body, headers=q.h))
    r = await client.post(
        f"/api/conversations/{q.thread_id}/branch", json={"from_turn": 1}, headers=q.h
    )
    assert r.status_code == 201, r.text
