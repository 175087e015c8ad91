"""Shutdown never hangs on a background task that loses its cancellation.

Python 3.11's `asyncio.wait_for` returns the inner result instead of raising when
the inner future finishes as the cancel arrives; the event pump's loop then ran on,
and a test session hung for good in an app's shutdown. `haico.process.background.stop` cancels
until the task ends, and gives up after its grace period.
"""

from __future__ import annotations

import asyncio
import gc
import time
from pathlib import Path

import pytest

from haico.config import Settings
from haico.events.bus import EventBus
from haico.main import create_app
from haico.process import background
from tests.conftest import sqlite_schema


async def test_a_task_that_swallows_a_cancellation_is_stopped() -> None:
    swallowed = 0

    async def loop() -> None:
        nonlocal swallowed
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                if swallowed:
                    raise
                swallowed += 1  # what wait_for did: the cancel is lost, the loop runs on

    task = asyncio.create_task(loop())
    await asyncio.sleep(0)
    assert await background.stop(task) is True
    assert task.done() and swallowed == 1


async def test_a_task_that_never_ends_is_left_after_the_grace() -> None:
    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                continue

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    started = time.monotonic()
    assert await background.stop(task, grace=0.5) is False
    assert 0.4 < time.monotonic() - started < 3
    assert not task.done()
    # Clean up: the loop has no way out, so end it from its own side.
    task.get_coro().close()  # type: ignore[union-attr]


@pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True)
async def test_app_shutdown_ends_when_the_event_pump_loses_its_cancel(
    settings: Settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    drains = 0
    real = EventBus._drain

    async def drain_swallowing(self: EventBus) -> None:
        nonlocal drains
        drains += 1
        try:
            await real(self)
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            return  # lost, as wait_for lost it

    monkeypatch.setattr(EventBus, "_drain", drain_swallowing)
    app = create_app(settings)
    started = None
    async with asyncio.timeout(20):
        async with app.router.lifespan_context(app):
            app.state.bus.wake()
            for _ in range(100):
                if drains:
                    break
                await asyncio.sleep(0.01)
            started = time.monotonic()
    assert drains >= 1
    assert started is not None and time.monotonic() - started < 10


async def test_a_serving_process_freezes_what_start_up_left_alive(tmp_path: Path) -> None:
    """A full collection over the libraries' objects stalls the event loop; after
    start-up they are out of the collector's reach, and the thresholds are set."""
    settings = Settings(
        data_dir=tmp_path / "d", secret_key="t", gc_freeze=True, gc_thresholds=(40_000, 15, 12)
    )
    await sqlite_schema(settings)
    app = create_app(settings)
    before = gc.get_threshold()
    try:
        async with app.router.lifespan_context(app):
            assert gc.get_freeze_count() > 50_000
            # Young collections are rarer, and so are the full ones they lead to.
            assert gc.get_threshold() == (40_000, 15, 12)
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
