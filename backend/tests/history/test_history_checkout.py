"""History checkout through the REST API, on both storage backends: the checkout
matrix, atomicity under injected failures, continuing from a checked-out node,
implicit checkouts on send, failed/cancelled nodes, deletes, and the event stream."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import func, select

from haico.db.faults import Step
from haico.db.models import Conversation
from haico.domain import NodeState
from haico.services.access import users
from haico.services.families import conversations
from tests.helpers import armed_faults, db_of
from tests.history_helpers import (
    actions,
    checkout,
    draft_ids,
    family_thread_ids,
    graph,
    has_action,
    live_server,
    log_size,
    read_events,
    thread_with_turns,
    turn_ok,
    without_ids,
    workspace,
)
from tests.history_helpers import history as get_history
from tests.sse_client import send_turn


@pytest.fixture
async def tid(client: httpx.AsyncClient) -> str:
    return await thread_with_turns(client, 3)


@pytest.fixture
def faults(app: FastAPI) -> Iterator[dict[str, Any]]:
    """Arm `faults["step"]` to make that checkout step raise."""
    with armed_faults(db_of(app), "step") as armed:
        yield armed


def listed(convs: list[dict[str, Any]]) -> set[str]:
    return {c["thread_id"] for c in convs}


# ---- the checkout matrix ----


async def test_history_starts_at_the_tip(client: httpx.AsyncClient, tid: str) -> None:
    h = await get_history(client, tid)
    assert h["root_thread_id"] == tid and h["working_thread_id"] == tid
    assert h["head_turn_id"] == f"{tid}:3" and h["retains_branches"] is True
    assert h["active_turn"] is None


async def test_checkout_to_tip_of_a_thread(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1})).json()
    bid = b["thread_id"]
    await turn_ok(client, bid, "objective: on the branch")
    assert (await get_history(client, tid))["head_turn_id"] == f"{bid}:2"
    r = await checkout(client, tid, f"{tid}:3")
    assert r.status_code == 200, r.text
    h = r.json()
    assert h["head_turn_id"] == f"{tid}:3" and h["working_thread_id"] == tid
    assert await draft_ids(app, tid) == []
    assert await get_history(client, bid) == h
    # and back to the branch's tip, asked through the root
    r = await checkout(client, tid, f"{bid}:2")
    assert r.json()["working_thread_id"] == bid and r.json()["head_turn_id"] == f"{bid}:2"
    assert await draft_ids(app, tid) == []


async def test_checkout_interior_node_makes_a_hidden_draft(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    r = await checkout(client, tid, f"{tid}:1")
    assert r.status_code == 200, r.text
    h = r.json()
    draft = h["working_thread_id"]
    assert draft != tid and h["head_turn_id"] == f"{tid}:1"
    assert await draft_ids(app, tid) == [draft]
    # never listed, but readable and editable through the thread endpoints
    assert draft not in listed((await client.get("/api/conversations")).json())
    conv = await client.get(f"/api/conversations/{draft}")
    assert conv.status_code == 200 and conv.json()["turn_index"] == 1
    ws = await workspace(client, draft)
    as_of = await workspace(client, tid, as_of=1)
    assert without_ids(ws) == without_ids(as_of)
    assert ws["objective"] == "step 1" and [t["text"] for t in ws["todos"]] == ["t1"]
    r = await client.put(f"/api/conversations/{draft}/objective", json={"text": "edited"})
    assert r.status_code == 200 and r.json()["objective"] == "edited"
    r = await client.post(f"/api/conversations/{draft}/todos", json={"text": "more"})
    assert r.status_code == 201
    assert (await workspace(client, tid))["objective"] == "step 3"  # the source is untouched
    msgs = (await client.get(f"/api/conversations/{draft}/messages")).json()
    full = (await client.get(f"/api/conversations/{tid}/messages")).json()
    assert msgs and all(m["turn_index"] == 1 for m in msgs)
    assert msgs == [m for m in full if m["turn_index"] <= 1]
    # the graph of the source does not show the draft's thread
    g = await graph(client, tid)
    assert draft not in {t["thread_id"] for t in g["threads"]}


async def test_checkout_to_the_baseline(app: FastAPI, client: httpx.AsyncClient, tid: str) -> None:
    r = await checkout(client, tid, None)
    assert r.status_code == 200, r.text
    h = r.json()
    assert h["head_turn_id"] is None and h["working_thread_id"] != tid
    ws = await workspace(client, h["working_thread_id"])
    assert ws["objective"] is None and ws["todos"] == [] and ws["artifacts"] == []
    assert (await client.get(f"/api/conversations/{h['working_thread_id']}/messages")).json() == []
    # the baseline of a fresh conversation is its own tip: no draft
    fresh = (await client.post("/api/conversations", json={})).json()["thread_id"]
    r = await checkout(client, fresh, None, expected_head_turn_id=None)
    assert r.status_code == 200 and r.json()["working_thread_id"] == fresh
    assert await draft_ids(app, fresh) == []


async def test_checkout_errors(app: FastAPI, client: httpx.AsyncClient, tid: str) -> None:
    before = await get_history(client, tid)
    seq = await log_size(app, tid)

    async def refused(turn_id: Any, status: int, code: str, **kw: Any) -> dict[str, Any]:
        r = await checkout(client, tid, turn_id, **kw)
        assert r.status_code == status, (turn_id, r.text)
        body: dict[str, Any] = r.json()
        assert body["code"] == code, body
        return body

    # unknown turns
    await refused(f"{tid}:99", 404, "not_found")
    await refused(f"{tid}:0", 404, "not_found")
    await refused("th_" + "0" * 32 + ":1", 404, "not_found")
    # malformed ids
    for bad in ("garbage", f"{tid}", f"{tid}:x", f"{tid}:-1", ":1", "th_:1"):
        await refused(bad, 404, "not_found")
    # a node of another family of the same user
    other = await thread_with_turns(client, 1)
    await refused(f"{other}:1", 404, "not_found")
    # another user's node
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    foreign = await conversations.create(db_of(app), principal=stranger)
    await refused(f"{foreign.thread_id}:0", 404, "not_found")
    await refused(f"{foreign.thread_id}:1", 404, "not_found")
    # stale expected head; null means the baseline
    body = await refused(f"{tid}:1", 409, "conflict", expected_head_turn_id=f"{tid}:2")
    assert body["message"]
    await refused(f"{tid}:1", 409, "conflict", expected_head_turn_id=None)
    assert await get_history(client, tid) == before
    assert await draft_ids(app, tid) == []
    assert await log_size(app, tid) == seq
    # a current expected head works, and so does null once the head is the baseline
    r = await checkout(client, tid, None, expected_head_turn_id=f"{tid}:3")
    assert r.status_code == 200
    r = await checkout(client, tid, f"{tid}:2", expected_head_turn_id=None)
    assert r.status_code == 200 and r.json()["head_turn_id"] == f"{tid}:2"


async def test_checkout_during_a_turn_is_refused(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    running = asyncio.create_task(send_turn(client, tid, "wait: 3"))
    for _ in range(100):
        h = await get_history(client, tid)
        if h["active_turn"]:
            break
        await asyncio.sleep(0.05)
    assert h["active_turn"] == {"turn_id": f"{tid}:4", "parent_turn_id": f"{tid}:3"}
    r = await checkout(client, tid, f"{tid}:1")
    assert r.status_code == 409 and r.json()["code"] == "turn_in_progress"
    r = await checkout(client, tid, f"{tid}:1", force=True)
    assert r.status_code == 409 and r.json()["code"] == "turn_in_progress"
    assert await draft_ids(app, tid) == []
    _, events, _ = await running
    assert events[-1][0] == "turn_completed"
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{tid}:4" and h["active_turn"] is None
    assert (await checkout(client, tid, f"{tid}:1")).status_code == 200


async def test_dirty_draft_needs_force(app: FastAPI, client: httpx.AsyncClient, tid: str) -> None:
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await client.put(f"/api/conversations/{draft}/objective", json={"text": "mine"})
    await client.post(f"/api/conversations/{draft}/todos", json={"text": "extra"})
    before = await get_history(client, tid)
    r = await checkout(client, tid, f"{tid}:3")
    assert r.status_code == 409
    body = r.json()
    assert body["code"] == "checkout_would_discard_changes"
    assert "objective" in body["message"] and "todos" in body["message"]
    assert body["data"]["message"] == body["message"]
    assert await get_history(client, tid) == before
    assert (await workspace(client, draft))["objective"] == "mine"
    # another interior node: still refused, even with a matching expected head
    r = await checkout(client, tid, f"{tid}:2", expected_head_turn_id=f"{tid}:1")
    assert r.status_code == 409 and r.json()["code"] == "checkout_would_discard_changes"
    r = await checkout(client, tid, f"{tid}:3", force=True)
    assert r.status_code == 200, r.text
    assert r.json()["working_thread_id"] == tid and r.json()["head_turn_id"] == f"{tid}:3"
    assert await draft_ids(app, tid) == []
    assert draft not in await family_thread_ids(app, tid)
    assert (await client.get(f"/api/conversations/{draft}")).status_code == 404


async def test_clean_draft_is_discarded_silently(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    first = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    r = await checkout(client, tid, f"{tid}:2")
    assert r.status_code == 200, r.text
    second = r.json()["working_thread_id"]
    assert second not in (first, tid)
    assert await draft_ids(app, tid) == [second]
    assert first not in await family_thread_ids(app, tid)
    # edits that were undone leave nothing to lose
    url = f"/api/conversations/{second}"
    await client.put(f"{url}/objective", json={"text": "changed"})
    todo = (await client.post(f"{url}/todos", json={"text": "temp"})).json()
    r = await checkout(client, tid, None)
    assert r.status_code == 409 and r.json()["code"] == "checkout_would_discard_changes"
    await client.put(f"{url}/objective", json={"text": "step 2"})
    await client.delete(f"{url}/todos/{todo['id']}")
    r = await checkout(client, tid, None)
    assert r.status_code == 200, r.text
    assert await draft_ids(app, tid) == [r.json()["working_thread_id"]]
    assert second not in await family_thread_ids(app, tid)


# ---- atomicity ----


# The checkout's steps, in the order it passes them.
CHECKOUT = [Step.VALIDATE, Step.LEASE, Step.DETECT, Step.RESTORE, Step.HEAD, Step.PUBLISH]


@pytest.mark.parametrize("step", CHECKOUT)
async def test_failure_after_each_step_changes_nothing(
    app: FastAPI, client: httpx.AsyncClient, tid: str, faults: dict[str, Any], step: str
) -> None:
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await client.put(f"/api/conversations/{draft}/objective", json={"text": "kept"})
    before = await get_history(client, tid)
    ws_before = await workspace(client, draft)
    threads = await family_thread_ids(app, tid)
    seq = await log_size(app, tid)
    faults["step"] = step
    r = await checkout(client, tid, f"{tid}:2", force=True)
    assert r.status_code == 500, r.text
    assert step in faults["seen"]
    faults["step"] = None
    assert await get_history(client, tid) == before
    assert await workspace(client, draft) == ws_before
    assert await family_thread_ids(app, tid) == threads
    assert await draft_ids(app, tid) == [draft]
    assert await log_size(app, tid) == seq
    # the same checkout then succeeds
    r = await checkout(client, tid, f"{tid}:2", force=True)
    assert r.status_code == 200 and r.json()["head_turn_id"] == f"{tid}:2"
    assert faults["seen"][-6:] == CHECKOUT


# ---- continuing after checkout ----


async def test_send_on_a_draft_promotes_it(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await client.put(f"/api/conversations/{draft}/objective", json={"text": "edited"})
    events = await turn_ok(client, draft, "todo: on the branch")
    assert events[0] == (
        "turn_started",
        {"turn_index": 2, "node_id": f"{draft}:2", "parent_node_id": f"{tid}:1"},
    )
    assert events[-1][1]["node_id"] == f"{draft}:2"
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{draft}:2" and h["working_thread_id"] == draft
    assert await draft_ids(app, tid) == []
    conv = next(
        c for c in (await client.get("/api/conversations")).json() if c["thread_id"] == draft
    )
    assert conv["parent_thread_id"] == tid and conv["branch_point_turn"] == 1
    # the old path is intact, the new node hangs from T:1
    g = await graph(client, tid)
    ids = {n["id"] for n in g["nodes"]}
    assert {f"{tid}:1", f"{tid}:2", f"{tid}:3", f"{draft}:2"} <= ids
    edges = {(e["source"], e["target"]) for e in g["edges"]}
    assert (f"{tid}:1", f"{tid}:2") in edges and (f"{tid}:2", f"{tid}:3") in edges
    assert (f"{tid}:1", f"{draft}:2") in edges
    assert g["head_turn_id"] == f"{draft}:2"
    # the draft's edits were carried into the branch
    ws = await workspace(client, draft)
    assert ws["objective"] == "edited"
    assert [t["text"] for t in ws["todos"]] == ["t1", "on the branch"]
    assert (await workspace(client, draft, as_of=1))["objective"] == "edited"
    assert (await workspace(client, tid))["objective"] == "step 3"
    msgs = (await client.get(f"/api/conversations/{draft}/messages")).json()
    users_ = [(m["content"], m["turn_index"]) for m in msgs if m["role"] == "user"]
    assert users_ == [("objective: step 1; todo: t1", 1), ("todo: on the branch", 2)]
    # and the next turn continues on the branch
    events = await turn_ok(client, draft, "hello")
    assert events[0][1]["parent_node_id"] == f"{draft}:2"


async def test_failed_promotion_keeps_the_draft(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await client.put(f"/api/conversations/{draft}/objective", json={"text": "precious"})
    before = await get_history(client, tid)
    runtime = app.state.runtime
    original = runtime.seed

    async def broken(**_: Any) -> None:
        raise RuntimeError("checkpointer down")

    runtime.seed = broken
    try:
        r = await client.post(f"/api/conversations/{draft}/turns", json={"content": "go"})
    finally:
        runtime.seed = original
    assert r.status_code == 502, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert r.json()["code"] == "seeding_failed"
    assert await get_history(client, tid) == before
    assert await draft_ids(app, tid) == [draft]
    assert (await workspace(client, draft))["objective"] == "precious"
    assert draft not in listed((await client.get("/api/conversations")).json())
    assert await runtime.raw_messages(draft) == []
    # a dirty draft is still protected, and sending again works
    r = await checkout(client, tid, f"{tid}:3")
    assert r.status_code == 409 and r.json()["code"] == "checkout_would_discard_changes"
    events = await turn_ok(client, draft, "go")
    assert events[0][1]["node_id"] == f"{draft}:2"
    assert (await workspace(client, draft))["objective"] == "precious"


async def test_send_to_another_thread_checks_out_its_tip(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1})).json()
    bid = b["thread_id"]
    # a branch that owns no turn becomes the working thread itself
    events = await turn_ok(client, bid, "objective: branch work")
    assert events[0][1] == {"turn_index": 2, "node_id": f"{bid}:2", "parent_node_id": f"{tid}:1"}
    h = await get_history(client, tid)
    assert h["working_thread_id"] == bid and h["head_turn_id"] == f"{bid}:2"
    # the root is not the working thread any more: sending there checks out its tip
    events = await turn_ok(client, tid, "hello")
    assert events[0][1]["parent_node_id"] == f"{tid}:3"
    h = await get_history(client, tid)
    assert h["working_thread_id"] == tid and h["head_turn_id"] == f"{tid}:4"
    # a dirty draft protects itself against an implicit checkout too
    draft = (await checkout(client, tid, f"{tid}:2")).json()["working_thread_id"]
    await client.put(f"/api/conversations/{draft}/objective", json={"text": "unsent"})
    status, _, body = await send_turn(client, bid, "objective: again")
    assert status == 409 and body["code"] == "checkout_would_discard_changes"
    assert "objective" in body["message"]
    assert (await get_history(client, tid))["working_thread_id"] == draft
    events = await turn_ok(client, bid, "objective: again", force="true")
    assert events[0][1]["parent_node_id"] == f"{bid}:2"
    assert await draft_ids(app, tid) == []
    # a draft discarded by a later checkout cannot be posted to
    status, _, body = await send_turn(client, draft, "too late")
    assert status == 404


async def test_failed_and_cancelled_turns_are_nodes(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    running = asyncio.create_task(send_turn(client, tid, "wait: 10"))
    for _ in range(100):
        if (await get_history(client, tid))["active_turn"]:
            break
        await asyncio.sleep(0.05)
    r = await client.post(f"/api/conversations/{tid}/turns/cancel")
    assert r.status_code == 200 and r.json()["node_id"] == f"{tid}:4"
    await running
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{tid}:4" and h["active_turn"] is None
    runtime = app.state.runtime
    original = runtime.run_turn

    async def failing(**_: Any) -> str:
        raise RuntimeError("model exploded")

    runtime.run_turn = failing
    try:
        status, events, _ = await send_turn(client, tid, "objective: fails")
    finally:
        runtime.run_turn = original
    assert status == 200 and events[-1][0] == "error"
    assert events[0][1]["parent_node_id"] == f"{tid}:4"
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{tid}:5"
    states = {n["id"]: n["state"] for n in (await graph(client, tid))["nodes"]}
    assert states[f"{tid}:4"] == NodeState.CANCELLED and states[f"{tid}:5"] == NodeState.ERROR
    # both can be checked out like any node
    r = await checkout(client, tid, f"{tid}:4")
    assert r.status_code == 200 and r.json()["head_turn_id"] == f"{tid}:4"


# ---- deleting the working thread moves the head to its branch point ----


async def test_deleting_the_working_thread_moves_the_head_to_its_branch_point(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 2})).json()
    bid = b["thread_id"]
    await turn_ok(client, bid, "objective: doomed branch")
    assert (await get_history(client, tid))["working_thread_id"] == bid
    r = await client.delete(f"/api/conversations/{bid}")
    assert r.status_code == 204
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{tid}:2"
    assert h["working_thread_id"] not in (bid,)
    ws = await workspace(client, h["working_thread_id"])
    assert without_ids(ws) == without_ids(await workspace(client, tid, as_of=2))
    # deleting a branch that is not the working thread leaves the head alone
    c = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1})).json()
    assert (await client.delete(f"/api/conversations/{c['thread_id']}")).status_code == 204
    assert await get_history(client, tid) == h


async def test_deleting_a_root_deletes_the_family(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    b = (await client.post(f"/api/conversations/{tid}/branch", json={"from_turn": 1})).json()
    draft = (await checkout(client, tid, f"{tid}:2")).json()["working_thread_id"]
    assert (await client.delete(f"/api/conversations/{tid}")).status_code == 204
    for thread in (tid, b["thread_id"], draft):
        assert (await client.get(f"/api/conversations/{thread}")).status_code == 404
        assert (await client.get(f"/api/conversations/{thread}/history")).status_code == 404
    assert not {tid, b["thread_id"]} & listed((await client.get("/api/conversations")).json())
    async with db_of(app).read() as s:
        alive = await s.scalar(
            select(func.count()).where(
                Conversation.root_thread_id == tid, Conversation.deleted_at.is_(None)
            )
        )
    assert alive == 0


# ---- events ----


async def test_events_replay_and_live(app: FastAPI, client: httpx.AsyncClient, tid: str) -> None:
    await turn_ok(client, tid, "hello there, tell me about the workspace")
    async with live_server(app) as url:
        replay = await read_events(
            url, tid, after=0, until=has_action("chat/turnComplete", turnId=f"{tid}:4")
        )
        seqs = [e["serverSeq"] for e in replay]
        assert seqs == sorted(set(seqs))
        for e in replay:
            assert set(e) == {"channel", "action", "serverSeq"}
        chat = [e for e in replay if e["channel"].startswith("ahp-chat:/")]
        assert {e["channel"] for e in chat} == {f"ahp-chat:/{uuid.UUID(hex=tid[3:])}"}
        started = actions(replay, "chat/turnStarted")
        assert [a["turnId"] for a in started] == [f"{tid}:{k}" for k in (1, 2, 3, 4)]
        assert "parentTurnId" not in started[0]
        assert [a.get("parentTurnId") for a in started[1:]] == [f"{tid}:{k}" for k in (1, 2, 3)]
        deltas = [a for a in actions(replay, "chat/delta") if a["turnId"] == f"{tid}:4"]
        assert deltas and all(a["content"] for a in deltas)
        kinds = [e["action"]["type"] for e in replay if e["action"].get("turnId") == f"{tid}:4"]
        assert kinds[0] == "chat/turnStarted" and kinds[-1] == "chat/turnComplete"
        # after=N resumes right after N, then streams live
        middle = replay[len(replay) // 2]["serverSeq"]
        ready = asyncio.Event()
        reader = asyncio.create_task(
            read_events(
                url,
                tid,
                after=middle,
                until=has_action("chat/historyCheckedOut", headTurnId=f"{tid}:2"),
                ready=ready,
            )
        )
        await asyncio.wait_for(ready.wait(), 10)
        r = await checkout(client, tid, f"{tid}:2")
        assert r.status_code == 200
        live = await reader
        assert live[0]["serverSeq"] == next(s for s in seqs if s > middle)
        lseqs = [e["serverSeq"] for e in live]
        assert lseqs == sorted(set(lseqs))
        assert [e for e in live if e["serverSeq"] <= seqs[-1]] == [
            e for e in replay if e["serverSeq"] > middle
        ]
        # a checkout to the baseline omits headTurnId
        r = await checkout(client, tid, None, force=True)
        assert r.status_code == 200
        tail = await read_events(
            url,
            tid,
            after=lseqs[-1],
            until=lambda ev: bool(actions(ev, "chat/historyCheckedOut")),
        )
        assert actions(tail, "chat/historyCheckedOut")[-1] == {"type": "chat/historyCheckedOut"}


async def test_deleting_the_working_draft(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    await client.put(f"/api/conversations/{draft}/objective", json={"text": "scrap"})
    r = await client.delete(f"/api/conversations/{draft}")
    assert r.status_code == 204, r.text
    assert (await client.get(f"/api/conversations/{draft}")).status_code == 404
    h = await get_history(client, tid)
    assert h["head_turn_id"] == f"{tid}:1" and h["working_thread_id"] != draft
    assert await draft_ids(app, tid) == [h["working_thread_id"]]
    ws = await workspace(client, h["working_thread_id"])
    assert without_ids(ws) == without_ids(await workspace(client, tid, as_of=1))


async def test_two_sends_on_a_draft_promote_it_once(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    draft = (await checkout(client, tid, f"{tid}:1")).json()["working_thread_id"]
    results = await asyncio.gather(
        send_turn(client, draft, "objective: first"), send_turn(client, draft, "objective: second")
    )
    statuses = sorted(r[0] for r in results)
    assert statuses in ([200, 200], [200, 409]), results
    for status, _, body in results:
        if status == 409:
            assert body["code"] == "turn_in_progress"
    msgs = (await client.get(f"/api/conversations/{draft}/messages")).json()
    users_ = [m["content"] for m in msgs if m["role"] == "user"]
    assert users_[0] == "objective: step 1; todo: t1"
    assert len(users_) == 1 + statuses.count(200)
    assert len(set(users_)) == len(users_)
    h = await get_history(client, tid)
    assert h["working_thread_id"] == draft
    assert h["head_turn_id"] == f"{draft}:{len(users_)}"
    assert await draft_ids(app, tid) == []
