"""SIGKILL at every step of every multi-step write, then restart: no visible
half-state, the family's head, working thread and workspace as before the failed
operation, the janitor reclaims every orphan, and the operation then works.

The server process kills itself when the write reaches the step (`tests.fault_server`).
Every step runs on PostgreSQL; SQLite runs one step of each operation.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from typing import Any

import httpx
import pytest

from tests.fault_server import KILL_HEADER
from tests.server import Server
from tests.sse_client import parse_sse

# operation -> the steps its writes pass through the fault seam, in order
STEPS: dict[str, list[str]] = {
    "branch": ["copy", "seed", "activate"],
    "fork": ["copy", "seed", "activate"],
    "promote": ["promote", "seed", "activate"],
    "checkout": ["validate", "lease", "detect", "head", "publish", "restore"],
}
SQLITE_STEPS = {"branch": "seed", "fork": "activate", "promote": "seed", "checkout": "head"}

CASES = [
    pytest.param(backend, op, step, id=f"{backend}-{op}-{step}")
    for backend in ("postgres", "sqlite")
    for op, steps in STEPS.items()
    for step in steps
    if backend == "postgres" or SQLITE_STEPS[op] == step
]


async def _turn(c: httpx.AsyncClient, tid: str, content: str) -> None:
    r = await c.post(f"/api/conversations/{tid}/turns", json={"content": content})
    assert r.status_code == 200, r.text
    assert parse_sse(r.text)[-1][0] == "turn_completed", r.text[-300:]


async def _family(c: httpx.AsyncClient) -> dict[str, str]:
    """A root with three turns and a branch at 1; for `promote`, an edited draft."""
    root = (await c.post("/api/conversations", json={"objective": "start"})).json()["thread_id"]
    for text in ("objective: one; prefer: short", "todo: outline", "objective: three"):
        await _turn(c, root, text)
    branch = await c.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
    assert branch.status_code == 201, branch.text
    await _turn(c, branch.json()["thread_id"], "todo: on the branch")
    back = await c.post(f"/api/conversations/{root}/checkout", json={"turn_id": f"{root}:2"})
    assert back.status_code == 200, back.text
    draft = back.json()["working_thread_id"]
    r = await c.put(f"/api/conversations/{draft}/objective", json={"text": "edited draft"})
    assert r.status_code == 200, r.text
    return {"root": root, "branch": branch.json()["thread_id"], "draft": draft}


async def _state(c: httpx.AsyncClient, f: dict[str, str]) -> dict[str, Any]:
    """Everything a user can see of the family."""
    root = f["root"]
    history = (await c.get(f"/api/conversations/{root}/history")).json()
    graph = (await c.get(f"/api/conversations/{root}/graph")).json()
    working = history["working_thread_id"]
    listed = (await c.get("/api/conversations")).json()
    return {
        "history": history,
        "nodes": sorted((n["id"], n["state"]) for n in graph["nodes"]),
        "edges": sorted(e["id"] for e in graph["edges"]),
        "threads": sorted(t["thread_id"] for t in graph["threads"]),
        "listed": sorted(x["thread_id"] for x in listed),
        "workspace": (await c.get(f"/api/conversations/{working}/workspace")).json(),
        "messages": len((await c.get(f"/api/conversations/{working}/messages")).json()),
    }


async def _operation(
    c: httpx.AsyncClient, f: dict[str, str], op: str, *, doomed: bool = False
) -> httpx.Response:
    """The write under test; `doomed`: the fault server dies at its step."""
    root = f["root"]
    headers = {KILL_HEADER: "1"} if doomed else {}
    if op == "branch":
        url, body = f"/api/conversations/{root}/branch", {"from_turn": 2}
    elif op == "fork":
        url, body = f"/api/conversations/{root}/fork", {"from_turn": 2}
    elif op == "promote":
        url, body = f"/api/conversations/{f['draft']}/turns", {"content": "go"}
    else:
        url = f"/api/conversations/{root}/checkout"
        body = {"turn_id": f"{f['branch']}:2", "force": True}
    return await c.post(url, json=body, headers=headers)


def _janitor(env: dict[str, str]) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "janitor"],
        env={**env, "HAICO_PENDING_MAX_AGE_SECONDS": "0"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    ).stdout
    report = json.loads(out[out.index("{") :])
    return [t for key in ("pending_branches", "building_forks") for t in report[key]]


def _check(env: dict[str, str]) -> dict[str, Any]:
    """`haico check` on the database the janitor left: exit 0, no problem."""
    out = subprocess.run(
        [sys.executable, "-m", "app.cli", "check"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    report: dict[str, Any] = json.loads(out.stdout)
    return report


@pytest.mark.parametrize(("backend", "op", "step"), CASES, indirect=["backend"])
async def test_sigkill_at_a_step_leaves_no_half_state(
    server_env: dict[str, str], op: str, step: str
) -> None:
    # One process builds the family, then dies at the step of the doomed request.
    doomed = Server(server_env, kill_at=step)
    await doomed.start()
    async with httpx.AsyncClient(base_url=doomed.url, timeout=60) as c:
        family = await _family(c)
        before = await _state(c, family)
        with contextlib.suppress(httpx.TransportError):
            r = await _operation(c, family, op, doomed=True)
            pytest.fail(f"the server answered {r.status_code} instead of dying at {step!r}")
    await asyncio.to_thread(doomed.wait_killed)

    restarted = Server(server_env)
    await restarted.start()
    try:
        async with httpx.AsyncClient(base_url=restarted.url, timeout=60) as c:
            assert await _state(c, family) == before, f"half-state after a kill at {step}"
            reclaimed = await asyncio.to_thread(_janitor, server_env)
            if step in ("seed", "activate") and op != "promote":
                assert len(reclaimed) == 1, reclaimed  # the half-built thread
            assert await asyncio.to_thread(_janitor, server_env) == []
            assert (await asyncio.to_thread(_check, server_env))["families_checked"] == 1
            assert await _state(c, family) == before
            # The operation works now, on the same family.
            r = await _operation(c, family, op)
            assert r.status_code in (200, 201), r.text
            if op == "promote":
                assert parse_sse(r.text)[-1][0] == "turn_completed"
                node = parse_sse(r.text)[-1][1]["node_id"]
                assert node.startswith(family["draft"] + ":"), node  # same thread id
    finally:
        await asyncio.to_thread(restarted.stop)
