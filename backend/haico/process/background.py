"""Stopping the process's background tasks (the event pump, the sweeper, the janitor,
the delta writer) so that a shutdown never hangs.

A cancelled task can swallow its cancellation: Python 3.11's `asyncio.wait_for`
returns the inner result instead of raising when the inner future finishes just as
the cancel arrives, and a loop around it then runs on. `stop` therefore cancels
again until the task ends, and gives up (with a log line) after a grace period.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

log = logging.getLogger("haico")

GRACE_SECONDS = 5.0
_RETRY_SECONDS = 0.1


async def stop(task: asyncio.Task[Any] | None, *, grace: float = GRACE_SECONDS) -> bool:
    """Cancel `task` and wait until it ends; False when it outlived `grace` seconds."""
    if task is None:
        return True
    loop = asyncio.get_running_loop()
    deadline = loop.time() + grace
    while not task.done():
        remaining = deadline - loop.time()
        if remaining <= 0:
            log.error("background task %s did not stop in %.0f s; leaving it", task, grace)
            return False
        task.cancel()
        await asyncio.wait({task}, timeout=min(_RETRY_SECONDS, remaining))
    if not task.cancelled():
        with contextlib.suppress(BaseException):
            task.result()  # retrieved, so asyncio does not log it as never retrieved
    return True


async def cancel_all(tasks: list[asyncio.Task[Any]]) -> None:
    """Cancel these short background tasks and wait until each has ended (what they
    leave undone is for their owner's next start to pick up)."""
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
