"""SIGKILL at every step of every multi-step write, then restart: no visible
half-state, the family's head, working thread and workspace as before the failed
operation, the janitor reclaims every orphan, and the operation then works.

The server process kills itself when the write reaches the step (`tests.fault_server`).
The restart is the app served in the test process on the same database: its start
does what a restarted server's does, and the janitor and the consistency check run
through the services `haico janitor` and `haico check` call (the commands themselves
are tested in tests/maintenance/test_backup_check.py).
Every step runs on PostgreSQL; SQLite runs one step of each operation.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.config import Settings
from haico.db.faults import Step
from haico.domain import NodeState
from haico.services.maintenance import consistency
from haico.wiring import janitor
from tests.fault_server import KILL_HEADER
from tests.server import Server, served_here
from tests.sse_client import parse_sse

# operation -> the steps its writes pass through the fault seam, in order
STEPS: dict[str, list[Step]] = {
    "branch": [Step.COPY, Step.SEED, Step.ACTIVATE],
    "fork": [Step.COPY, Step.SEED, Step.ACTIVATE],
    "promote": [Step.PROMOTE, Step.SEED, Step.ACTIVATE],
    "checkout": [Step.VALIDATE, Step.LEASE, Step.DETECT, Step.HEAD, Step.PUBLISH, Step.RESTORE],
    "import": [Step.IMPORT_ROWS, Step.IMPORT_SEED, Step.IMPORT_ACTIVATE],
    "merge": [Step.MERGE_PLAN, Step.MERGE_NODE, Step.MERGE_APPLY, Step.MERGE_HEAD],
}
SQLITE_STEPS = {
    "branch": Step.SEED,
    "fork": Step.ACTIVATE,
    "promote": Step.SEED,
    "checkout": Step.HEAD,
    "import": Step.IMPORT_SEED,
    "merge": Step.MERGE_APPLY,
}
# The steps after which a kill leaves a half-built thread for the janitor (the steps
# before them are in the transaction that creates it, which the kill rolls back).
HALF_BUILT = {Step.SEED, Step.ACTIVATE, Step.IMPORT_SEED, Step.IMPORT_ACTIVATE}

CASES = [
    pytest.param(backend, op, step, id=f"{backend}-{op}-{step}")
    for backend in ("postgres", "sqlite")
    for op, steps in STEPS.items()
    for step in steps
    if backend == "postgres" or SQLITE_STEPS[op] == step
]


# The end of a turn: its closing write, and the sweep that closes the turn of a server
# that died (run by the next server at its start: the case kills one at CLOSE first).
TURN_CASES = [
    pytest.param(backend, step, id=f"{backend}-turn-{step}")
    for backend, step in (
        ("postgres", Step.CLOSE),
        ("postgres", Step.SWEEP),
        ("sqlite", Step.CLOSE),
    )
]


# A conversation created by its first send: the root is inserted in the transaction
# that opens the turn (`POST …/turns?create=true`), killed right after that insert.
FIRST_SEND_CASES = [
    pytest.param(backend, Step.OPEN, id=f"{backend}-first-send-{Step.OPEN}")
    for backend in ("postgres", "sqlite")
]


# A send on an edited draft, killed after the draft became a branch (committed) and
# before its turn opened.
BRANCHED_CASES = [
    pytest.param(backend, Step.BRANCHED, id=f"{backend}-send-on-a-draft-{Step.BRANCHED}")
    for backend in ("postgres", "sqlite")
]


# After a merge committed, its document's search vector (PostgreSQL only: SQLite keeps
# none, so there is no such step there).
VECTOR_CASES = [pytest.param("postgres", Step.MERGE_VECTORS, id="postgres-merge-vectors")]


def test_every_step_of_the_fault_seam_has_a_kill_case() -> None:
    """A step added to `haico.db.faults.Step` fails here until a case kills there."""
    killed = (
        {p.values[2] for p in CASES}
        | {p.values[1] for p in TURN_CASES}
        | {p.values[1] for p in FIRST_SEND_CASES}
        | {p.values[1] for p in BRANCHED_CASES}
        | {p.values[1] for p in VECTOR_CASES}
    )
    assert killed == set(Step)


async def _turn(c: httpx.AsyncClient, tid: str, content: str) -> None:
    r = await c.post(f"/api/conversations/{tid}/turns", json={"content": content})
    assert r.status_code == 200, r.text
    assert parse_sse(r.text)[-1][0] == "turn_completed", r.text[-300:]


async def _family(c: httpx.AsyncClient) -> dict[str, Any]:
    """A root with three turns and a branch at 1; for `promote`, an edited draft; for
    `import`, the family's export."""
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
    export = await c.get(f"/api/conversations/{root}/export")
    assert export.status_code == 200, export.text
    return {
        "root": root,
        "branch": branch.json()["thread_id"],
        "draft": draft,
        "export": export.json(),
    }


async def _state(c: httpx.AsyncClient, f: dict[str, Any]) -> dict[str, Any]:
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
    c: httpx.AsyncClient, f: dict[str, Any], op: str, *, doomed: bool = False
) -> httpx.Response:
    """The write under test; `doomed`: the fault server dies at its step."""
    root = f["root"]
    headers = {KILL_HEADER: "1"} if doomed else {}
    body: dict[str, Any]
    if op == "branch":
        url, body = f"/api/conversations/{root}/branch", {"from_turn": 2}
    elif op == "fork":
        url, body = f"/api/conversations/{root}/fork", {"from_turn": 2}
    elif op == "promote":
        url, body = f"/api/conversations/{f['draft']}/turns", {"content": "go"}
    elif op == "import":
        url, body = "/api/conversations/import", f["export"]
    elif op == "merge":
        # Into the root, which is not the working thread (the edited draft is): the
        # implicit checkout is part of the merge's transaction.
        url = f"/api/conversations/{root}/merge"
        body = {"source": f"{f['branch']}:2", "mode": "merge", "force": True}
    else:
        url = f"/api/conversations/{root}/checkout"
        body = {"turn_id": f"{f['branch']}:2", "force": True}
    return await c.post(url, json=body, headers=headers)


async def _janitor(app: FastAPI) -> list[str]:
    """One `haico janitor` run with no age limit: the half-built threads it removed."""
    report = await janitor.run_once(
        app.state.db, app.state.runtime, max_age_seconds=0, settings=app.state.settings
    )
    return [*report.pending_branches, *report.building_forks]


async def _check(app: FastAPI) -> int:
    """`haico check` on the database the janitor left: no problem; families checked."""
    settings: Settings = app.state.settings
    report = await consistency.check(
        app.state.db, app.state.runtime.store, max_age_seconds=settings.pending_max_age_seconds
    )
    assert report.ok, report.to_json()
    return report.families


@pytest.mark.parametrize(("backend", "op", "step"), CASES, indirect=["backend"])
async def test_sigkill_at_a_step_leaves_no_half_state(
    server_env: dict[str, str], op: str, step: Step
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

    async with served_here(server_env) as (app, c):
        assert await _state(c, family) == before, f"half-state after a kill at {step}"
        reclaimed = await _janitor(app)
        if step in HALF_BUILT and op != "promote":
            # The half-built thread, or every thread of the half-imported family.
            built = len(family["export"]["threads"]) if op == "import" else 1
            assert len(reclaimed) == built, reclaimed
        else:
            assert reclaimed == []
        assert await _janitor(app) == []
        assert await _check(app) == 1
        assert await _state(c, family) == before
        # The operation works now, on the same family.
        r = await _operation(c, family, op)
        assert r.status_code in (200, 201), r.text
        if op == "promote":
            assert parse_sse(r.text)[-1][0] == "turn_completed"
            node = parse_sse(r.text)[-1][1]["node_id"]
            assert node.startswith(family["draft"] + ":"), node  # same thread id


@pytest.mark.parametrize(("backend", "step"), TURN_CASES, indirect=["backend"])
async def test_sigkill_at_a_turns_end_leaves_a_failed_node(
    server_env: dict[str, str], step: Step
) -> None:
    """The turn whose server died is a failed node with its message, the head on it,
    and the conversation goes on."""
    doomed = Server(server_env, kill_at=Step.CLOSE)
    await doomed.start()
    async with httpx.AsyncClient(base_url=doomed.url, timeout=60) as c:
        root = (await c.post("/api/conversations", json={})).json()["thread_id"]
        await _turn(c, root, "objective: one")
        with contextlib.suppress(httpx.TransportError):
            r = await c.post(
                f"/api/conversations/{root}/turns",
                json={"content": "todo: two"},
                headers={KILL_HEADER: "1"},
            )
            pytest.fail(f"the server answered {r.status_code} instead of dying at close")
    await asyncio.to_thread(doomed.wait_killed)
    if step == Step.SWEEP:
        # The next server sweeps the dead server's turn at its start, and dies there.
        sweeper = Server(server_env, kill_at=Step.SWEEP)
        sweeper.spawn()
        await asyncio.to_thread(sweeper.wait_killed)

    async with served_here(server_env) as (app, c):
        node = f"{root}:2"
        graph = (await c.get(f"/api/conversations/{root}/graph")).json()
        assert {n["id"]: n["state"] for n in graph["nodes"]} == {
            f"{root}:1": NodeState.COMPLETE,
            node: NodeState.ERROR,
        }
        history = (await c.get(f"/api/conversations/{root}/history")).json()
        assert (history["head_turn_id"], history["active_turn"]) == (node, None)
        messages = (await c.get(f"/api/conversations/{root}/messages")).json()
        asked = [m["content"] for m in messages if m["role"] == "user"]
        assert asked == ["objective: one", "todo: two"]
        # the sweep recorded what is known of the lost turn, once (a sweep killed
        # midway left no provenance behind, the next one wrote it)
        lost = (await c.get(f"/api/conversations/{root}/nodes/2")).json()["provenance"]
        assert lost["provider"] == "offline" and lost["model"] == "haico-offline"
        assert lost["tokens_estimated"] is True and lost["duration_ms"] is None
        assert await _janitor(app) == []
        assert await _check(app) == 1
        await _turn(c, root, "todo: three")


@pytest.mark.parametrize(("backend", "step"), FIRST_SEND_CASES, indirect=["backend"])
async def test_sigkill_at_a_first_send_leaves_no_conversation(
    server_env: dict[str, str], step: Step
) -> None:
    """The server dies after inserting the new root, before the turn's transaction
    commits: after the restart there is no conversation of that id (no empty row in the
    list), nothing for the janitor, and the same first send then creates it."""
    doomed = Server(server_env, kill_at=step)
    await doomed.start()
    new_id = "th_" + "5" * 32
    url = f"/api/conversations/{new_id}/turns"
    async with httpx.AsyncClient(base_url=doomed.url, timeout=60) as c:
        listed = sorted(x["thread_id"] for x in (await c.get("/api/conversations")).json())
        with contextlib.suppress(httpx.TransportError):
            r = await c.post(
                url,
                params={"create": "true"},
                json={"content": "objective: born on send"},
                headers={KILL_HEADER: "1"},
            )
            pytest.fail(f"the server answered {r.status_code} instead of dying at {step!r}")
    await asyncio.to_thread(doomed.wait_killed)

    async with served_here(server_env) as (app, c):
        assert (await c.get(f"/api/conversations/{new_id}")).status_code == 404
        now = sorted(x["thread_id"] for x in (await c.get("/api/conversations")).json())
        assert now == listed
        assert await _janitor(app) == []
        r = await c.post(url, params={"create": "true"}, json={"content": "objective: born"})
        assert r.status_code == 200, r.text
        assert parse_sse(r.text)[-1][0] == "turn_completed", r.text[-300:]
        assert (await c.get(f"/api/conversations/{new_id}")).json()["title"] == "born"
        assert await _check(app) == 1


@pytest.mark.parametrize(("backend", "step"), BRANCHED_CASES, indirect=["backend"])
async def test_sigkill_after_a_draft_became_a_branch_keeps_the_branch(
    server_env: dict[str, str], step: Step
) -> None:
    """The server dies after the draft of a send became a branch, before the turn
    opened: after the restart the draft is a branch of the same id (listed, in the
    graph), still the working thread with its edits and the head at its branch point,
    nothing for the janitor, and the send then opens its turn on it."""
    doomed = Server(server_env, kill_at=step)
    await doomed.start()
    async with httpx.AsyncClient(base_url=doomed.url, timeout=60) as c:
        family = await _family(c)
        before = await _state(c, family)
        with contextlib.suppress(httpx.TransportError):
            r = await _operation(c, family, "promote", doomed=True)
            pytest.fail(f"the server answered {r.status_code} instead of dying at {step!r}")
    await asyncio.to_thread(doomed.wait_killed)

    async with served_here(server_env) as (app, c):
        draft = family["draft"]
        after = await _state(c, family)
        assert after["listed"] == sorted([*before["listed"], draft])
        assert after["threads"] == sorted([*before["threads"], draft])
        same = ("history", "nodes", "edges", "workspace", "messages")
        assert {k: after[k] for k in same} == {k: before[k] for k in same}
        assert await _janitor(app) == []
        assert await _check(app) == 1
        r = await _operation(c, family, "promote")
        assert r.status_code == 200, r.text
        assert parse_sse(r.text)[-1][1]["node_id"] == f"{draft}:3"


@pytest.mark.parametrize(("backend", "step"), VECTOR_CASES, indirect=["backend"])
async def test_sigkill_before_a_merges_search_vector_keeps_the_merge_and_indexes_it(
    server_env: dict[str, str], step: Step
) -> None:
    """The merge committed; its process dies computing the merged document's search
    vector (after the answer, or before it was sent). The next server has the whole
    merge, and search finds the merged document at the merge node."""
    doomed = Server(server_env, kill_at=step)
    await doomed.start()
    async with httpx.AsyncClient(base_url=doomed.url, timeout=60) as c:
        root = (await c.post("/api/conversations", json={})).json()["thread_id"]
        doc = f"/api/conversations/{root}/document"
        assert (await c.put(doc, json={"content": "a plain draft\n"})).status_code == 200
        await _turn(c, root, "objective: write")
        r = await c.post(f"/api/conversations/{root}/branch", json={"from_turn": 1})
        side = r.json()["thread_id"]
        r = await c.put(f"/api/conversations/{side}/document", json={"content": "a quokka\n"})
        assert r.status_code == 200, r.text
        await _turn(c, side, "todo: cite it")
        with contextlib.suppress(httpx.TransportError):
            r = await c.post(
                f"/api/conversations/{root}/merge",
                json={"source": f"{side}:2", "mode": "merge", "force": True},
                headers={KILL_HEADER: "1"},
            )
            assert r.status_code == 201, r.text
    await asyncio.to_thread(doomed.wait_killed)

    async with served_here(server_env) as (app, c):
        graph = (await c.get(f"/api/conversations/{root}/graph")).json()
        kinds = {n["id"]: n.get("kind") for n in graph["nodes"]}
        assert kinds[f"{root}:2"] == "merge", kinds
        content = (await c.get(f"/api/conversations/{root}/workspace")).json()["document"]
        assert content["content"] == "a quokka\n"
        hits = (await c.get("/api/search", params={"q": "quokka"})).json()["results"]
        assert f"{root}:2" in {h["node_id"] for h in hits if h["kind"] == "document"}
        assert await _check(app) == 1
