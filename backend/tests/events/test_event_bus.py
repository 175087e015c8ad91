"""The event bus hands out what this process commits without reading it back, and
falls back to reading the log whenever what it is told does not follow on."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from haico.config import Settings
from haico.db.engine import Database
from haico.domain import LoggedAction
from haico.events import log as action_log
from haico.events.bus import EventBus, Subscription

pytestmark = pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    # No poll: only a local commit (or a NOTIFY, skipped here: same origin) delivers.
    return {"event_poll_seconds": 0}


@pytest.fixture
async def db(settings: Settings) -> AsyncIterator[Database]:
    database = Database(settings.sql_url)
    yield database
    await database.dispose()


@pytest.fixture
async def bus(settings: Settings, db: Database) -> AsyncIterator[EventBus]:
    events = EventBus(settings, db)
    await events.start()
    yield events
    await events.close()


@pytest.fixture
def log_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The `after` of every read of the log from here on."""
    calls: list[int] = []
    real = action_log.read_after

    async def counted(session: Any, *, after: int, **kw: Any) -> Any:
        calls.append(after)
        return await real(session, after=after, **kw)

    monkeypatch.setattr(action_log, "read_after", counted)
    return calls


def _root() -> str:
    return f"th_{uuid.uuid4().hex}"


async def _append(db: Database, root: str, *names: str) -> None:
    async with db.transaction() as s:
        await action_log.append_chat(s, root, *({"type": "test", "name": n} for n in names))


async def _names(stream: AsyncIterator[LoggedAction], count: int) -> list[str]:
    out: list[str] = []
    async with asyncio.timeout(10):
        while len(out) < count:
            out.append((await anext(stream)).action["name"])
    return out


async def test_local_commits_are_handed_out_without_reading_the_log(
    db: Database, bus: EventBus, log_reads: list[int]
) -> None:
    root = _root()
    stream = bus.stream(root_thread_ids={root}, after=bus.last_seq)
    first = asyncio.ensure_future(_names(stream, 4))
    await asyncio.sleep(0)  # the stream subscribes
    await _append(db, root, "a")
    await _append(db, root, "b", "c")
    await _append(db, _root(), "another family")
    await _append(db, root, "d")
    assert await first == ["a", "b", "c", "d"]
    assert log_reads == []
    await stream.aclose()  # type: ignore[attr-defined]


async def test_subscribers_get_frozen_values_read_back_or_live(db: Database, bus: EventBus) -> None:
    """What the faces are handed is a value, not a storage row, whether it was read
    back from the log (committed before the stream began) or handed out live; no
    subscriber can change it under another."""
    root = _root()
    after = bus.last_seq
    await _append(db, root, "before")
    stream = bus.stream(root_thread_ids={root}, after=after)
    async with asyncio.timeout(10):
        read_back = await anext(stream)
        live = asyncio.ensure_future(anext(stream))
        await asyncio.sleep(0)
        await _append(db, root, "live")
        handed = await live
    for entry in (read_back, handed):
        assert type(entry) is LoggedAction
        with pytest.raises(dataclasses.FrozenInstanceError):
            entry.seq = 0  # type: ignore[misc]
    assert [read_back.action["name"], handed.action["name"]] == ["before", "live"]
    assert handed.seq > read_back.seq > after
    await stream.aclose()  # type: ignore[attr-defined]


async def test_entries_committed_elsewhere_come_first_and_in_order(
    settings: Settings, db: Database, bus: EventBus, log_reads: list[int]
) -> None:
    """Another process's commit (here a second engine, which tells no bus) leaves a
    gap: the next local commit does not follow on, so the bus reads the log."""
    root = _root()
    other = Database(settings.sql_url)
    try:
        stream = bus.stream(root_thread_ids={root}, after=bus.last_seq)
        got = asyncio.ensure_future(_names(stream, 3))
        await asyncio.sleep(0)
        await _append(other, root, "elsewhere")
        await _append(db, root, "here", "and here")
        assert await got == ["elsewhere", "here", "and here"]
        assert len(log_reads) >= 1
    finally:
        await other.dispose()
    await stream.aclose()  # type: ignore[attr-defined]


async def test_an_append_that_rolled_back_does_not_stall_delivery(
    db: Database, bus: EventBus
) -> None:
    root = _root()
    stream = bus.stream(root_thread_ids={root}, after=bus.last_seq)
    got = asyncio.ensure_future(_names(stream, 2))
    await asyncio.sleep(0)
    with pytest.raises(RuntimeError):
        async with db.transaction() as s:
            await action_log.append_chat(s, root, {"type": "test", "name": "lost"})
            raise RuntimeError("the transaction fails after its append")
    await _append(db, root, "kept")
    await _append(db, root, "next")
    assert await got == ["kept", "next"]
    await stream.aclose()  # type: ignore[attr-defined]


async def test_an_entry_handed_out_twice_reaches_a_subscriber_once(bus: EventBus) -> None:
    """A local commit handed out while the pump's read was in flight: the read's copy
    of the same entry is not handed out again."""
    root = _root()
    sub = Subscription({root})
    bus._subs.setdefault(root, set()).add(sub)
    n = bus.last_seq
    entries = [
        LoggedAction(seq=n + i, root_thread_id=root, channel="c", action={"i": i})
        for i in (1, 2, 3)
    ]
    bus.committed(entries[:1])
    bus._hand_out(entries)  # what the pump read, the first one included
    bus.committed(entries[2:])  # already handed out: no effect
    got = [sub.queue.get_nowait() for _ in range(sub.queue.qsize())]
    assert [e.seq for e in got if e is not None] == [n + 1, n + 2, n + 3]
    assert bus.last_seq == n + 3


async def _append_seqs(db: Database, root: str, *names: str) -> list[int]:
    async with db.transaction() as s:
        entries = await action_log.append_chat(
            s, root, *({"type": "test", "name": n} for n in names)
        )
    return [e.seq for e in entries]


async def test_a_process_passes_over_families_it_does_not_follow_without_reading(
    settings: Settings, db: Database, bus: EventBus, log_reads: list[int]
) -> None:
    """Another process (a second engine; its NOTIFY is simulated, since one test
    process has one origin) commits to a family no subscriber here follows: the bus
    moves past those entries without reading them, so this process's next commit still
    follows on and is handed out without a read. A subscriber that starts later reads
    what it missed from the log."""
    followed, unfollowed = _root(), _root()
    other = Database(settings.sql_url)
    try:
        stream = bus.stream(root_thread_ids={followed}, after=bus.last_seq)
        got = asyncio.ensure_future(_names(stream, 1))
        await asyncio.sleep(0)
        start = bus.last_seq
        seqs = await _append_seqs(other, unfollowed, "x1", "x2")
        assert seqs == [start + 1, start + 2]
        bus.noticed(action_log.Notice("elsewhere", seqs[0], seqs[-1], frozenset({unfollowed})))
        assert bus.last_seq == seqs[-1]
        await _append(db, followed, "here")
        assert await got == ["here"]
        await asyncio.sleep(0.05)
        assert log_reads == []

        late = bus.stream(root_thread_ids={unfollowed}, after=start)
        assert await _names(late, 2) == ["x1", "x2"]  # read from the log
        await late.aclose()  # type: ignore[attr-defined]

        # A family followed here, or entries after a gap, are read.
        more = asyncio.ensure_future(_names(stream, 1))
        seqs = await _append_seqs(other, followed, "from elsewhere")
        bus.noticed(action_log.Notice("elsewhere", seqs[0], seqs[-1], frozenset({followed})))
        assert await more == ["from elsewhere"]
        assert log_reads
        # The same notice again (it arrived after a read that saw its entries): no read.
        reads = len(log_reads)
        bus.noticed(action_log.Notice("elsewhere", seqs[0], seqs[-1], frozenset({followed})))
        await asyncio.sleep(0.05)
        assert len(log_reads) == reads
        # A notice that does not follow on from the last entry seen is read, even for
        # a family no one follows (the subscriber below starts live: it gets the
        # entry only if the pump reads it).
        live = bus.stream(root_thread_ids={unfollowed}, after=bus.last_seq)
        after_gap = asyncio.ensure_future(_names(live, 1))
        await asyncio.sleep(0)
        seqs = await _append_seqs(other, unfollowed, "after a gap")
        bus.noticed(action_log.Notice("elsewhere", seqs[0] + 1, seqs[-1] + 1, frozenset({"x"})))
        assert await after_gap == ["after a gap"]
        await live.aclose()  # type: ignore[attr-defined]
    finally:
        await other.dispose()
    await stream.aclose()  # type: ignore[attr-defined]
