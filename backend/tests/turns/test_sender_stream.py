"""The sender's stream of `POST …/turns`: each event once, in the log's order.

The turn sends its own events (started, tokens, tool calls, end); the log sends the
edits of its thread. These tests compare what the sender read with what the log
holds, so an event sent by both (or by neither) fails them, and they hold the log's
delivery back to show that the end still waits for the edits logged before it while
the tokens do not wait for the log. A family follower resuming with `Last-Event-ID`
in the middle of a turn reads the rest of the log once, and a turn whose stream
cannot read the log still ends it.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
from fastapi import FastAPI

from haico.events import log as action_log
from haico.events.bus import EventBus
from tests.events.test_sse_and_contract import read_stream
from tests.helpers import db_of
from tests.history_helpers import live_server
from tests.sse_client import send_turn

TOOLS = "objective: cycling; prefer: data first; todo: survey; artifact Notes: n"
ENDS = ("turn_completed", "error")


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    # No poll of the log: only a commit (or `slow_log`'s late wake) moves the bus on.
    return {"event_poll_seconds": 0}


@pytest.fixture
async def tid(client: httpx.AsyncClient) -> str:
    r = await client.post("/api/conversations", json={"title": "S"})
    return str(r.json()["thread_id"])


async def logged(app: FastAPI, root: str) -> list[tuple[int, dict[str, Any]]]:
    """(seq, action) of the family's log, oldest first."""
    async with db_of(app).read() as s:
        entries = await action_log.read_after(s, after=0, root_thread_ids={root}, limit=10_000)
    return [(e.seq, e.action) for e in entries]


def as_sender_reads(actions: list[dict[str, Any]], thread_id: str) -> list[tuple[str, Any]]:
    """What the sender must read for one turn, from its logged actions: the text
    between two other events joined (tokens may leave in any chunks), tool calls by
    name and input, edits of the thread by surface, and the end by name."""
    out: list[tuple[str, Any]] = []
    for a in actions:
        kind = a["type"]
        if kind == "chat/turnStarted":
            out.append(("turn_started", a["turnId"]))
        elif kind == "chat/delta":
            if out and out[-1][0] == "text":
                out[-1] = ("text", out[-1][1] + a["content"])
            else:
                out.append(("text", a["content"]))
        elif kind == "chat/responsePart" and a["part"]["kind"] == "toolCall":
            call = a["part"]["toolCall"]
            out.append(("tool_call", (call["toolName"], call["toolInput"])))
        elif kind == "haico/workspaceChanged" and a["threadId"] == thread_id:
            out.append(("workspace_changed", a["surfaces"]))
        elif kind == "chat/turnComplete":
            out.append(("turn_completed", a["turnId"]))
    return out


def as_read(events: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The sender's events in the same terms as `as_sender_reads`."""
    out: list[tuple[str, Any]] = []
    for name, data in events:
        if name == "token":
            if out and out[-1][0] == "text":
                out[-1] = ("text", out[-1][1] + data["text"])
            else:
                out.append(("text", data["text"]))
        elif name == "turn_started":
            out.append((name, data["node_id"]))
        elif name == "tool_call":
            out.append((name, (data["name"], data["args"])))
        elif name == "workspace_changed":
            out.append((name, data["surfaces"]))
        else:
            out.append((name, data.get("node_id")))
    return out


async def test_every_event_reaches_the_sender_once_in_the_logs_order(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    for content in (TOOLS, "and now, tell me what we have so far?"):
        status, events, _ = await send_turn(client, tid, content)
        assert status == 200
        node = events[0][1]["node_id"]
        names = [n for n, _ in events]
        assert names.count("turn_started") == 1 and names[0] == "turn_started"
        assert sum(names.count(end) for end in ENDS) == 1 and names[-1] == "turn_completed"
        # One token event per model chunk: the text was not gathered by the log first.
        if content == TOOLS:
            assert names.count("tool_call") == names.count("workspace_changed") == 4
        tokens = [d["text"] for n, d in events if n == "token"]
        assert len(tokens) > 3 and "".join(tokens) == events[-1][1]["reply"]
        # Exactly what the log holds for this turn, each event once, in its order (the
        # edits, which come from the log, in their own order and before the end).
        entries = [a for _, a in await logged(app, tid)]
        first = next(i for i, a in enumerate(entries) if a.get("turnId") == node)
        expected = as_sender_reads(entries[first:], tid)
        read = as_read(events)
        assert [e for e in read if e[0] != "workspace_changed"] == [
            e for e in expected if e[0] != "workspace_changed"
        ]
        assert [e for e in read if e[0] == "workspace_changed"] == [
            e for e in expected if e[0] == "workspace_changed"
        ]


@contextlib.contextmanager
def slow_log(app: FastAPI, delay: float) -> Iterator[None]:
    """Hand this process's commits to the bus late (it then reads them from the log, in
    order), as when another process's entries come first: `delay` seconds after the
    reply's first token (then already with its sender)."""
    bus: EventBus = app.state.bus
    deltas = app.state.turns.deltas
    listeners = db_of(app).commit_listeners
    at = listeners.index(bus.committed)
    began = asyncio.Event()
    waking: set[asyncio.Task[None]] = set()
    add_text = deltas.add_text

    def first_text(turn_id: str, text: str) -> None:
        began.set()
        add_text(turn_id, text)

    async def wake_later() -> None:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(10):
                await began.wait()
        await asyncio.sleep(delay)
        bus.wake()

    def late(_entries: Any) -> None:
        task = asyncio.get_running_loop().create_task(wake_later())
        waking.add(task)
        task.add_done_callback(waking.discard)

    listeners[at] = late
    deltas.add_text = first_text
    try:
        yield
    finally:
        listeners[at] = bus.committed
        del deltas.add_text
        for task in waking:
            task.cancel()


async def test_edits_arrive_before_the_end_even_when_the_log_is_slow(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    with slow_log(app, 0.5):
        status, events, _ = await send_turn(client, tid, TOOLS)
    assert status == 200
    names = [n for n, _ in events]
    assert names[-1] == "turn_completed"
    # All four tool edits, each once, before the end.
    edits = [a for _, a in await logged(app, tid) if a["type"] == "haico/workspaceChanged"]
    assert len(edits) == 4
    assert [d["surfaces"] for n, d in events if n == "workspace_changed"] == [
        e["surfaces"] for e in edits
    ]
    # The tokens did not wait for the log: the first one came before any edit.
    assert names.index("token") < names.index("workspace_changed")


async def test_a_follower_resuming_mid_turn_reads_the_rest_once(
    app: FastAPI, client: httpx.AsyncClient, tid: str
) -> None:
    _, events, _ = await send_turn(client, tid, TOOLS)
    entries = await logged(app, tid)
    seqs = [seq for seq, _ in entries]
    call = next(
        seq
        for seq, a in entries
        if a["type"] == "chat/responsePart" and a["part"]["kind"] == "toolCall"
    )
    async with live_server(app) as base:
        rest, _ = await read_stream(
            base, tid, want=len([s for s in seqs if s > call]), headers={"Last-Event-ID": str(call)}
        )
    got = [int(i) for i, _, _ in rest if i is not None]
    assert got == [s for s in seqs if s > call]
    # The whole text the sender read is in the log once: before the resume point and after.
    text = "".join(a["content"] for _, a in entries if a["type"] == "chat/delta")
    assert text == "".join(d["text"] for n, d in events if n == "token") == events[-1][1]["reply"]


async def test_a_turn_whose_stream_cannot_read_the_log_still_ends(
    app: FastAPI, client: httpx.AsyncClient, tid: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def unreadable(**_: Any) -> AsyncIterator[Any]:
        raise RuntimeError("injected: the log cannot be read")
        yield  # (a generator, as the bus's stream is)

    monkeypatch.setattr(app.state.bus, "stream", unreadable)
    status, events, _ = await send_turn(client, tid, TOOLS)
    assert status == 200
    names = [n for n, _ in events]
    # Everything the turn sends itself arrives and the stream ends; the edits, which
    # come from the log, are missing (the workspace has them).
    assert names[0] == "turn_started" and names[-1] == "turn_completed"
    assert names.count("tool_call") == 4 and "workspace_changed" not in names
    assert "".join(d["text"] for n, d in events if n == "token") == events[-1][1]["reply"]
    ws = (await client.get(f"/api/conversations/{tid}/workspace")).json()
    assert ws["objective"] == "cycling"
