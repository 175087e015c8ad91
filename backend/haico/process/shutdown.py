"""Telling the app that the server is stopping, before uvicorn waits for open
responses to finish.

uvicorn handles SIGTERM/SIGINT by refusing new connections and then waiting for the
open ones, and only afterwards runs the app's shutdown: an endless SSE response would
hold it until it is killed. `on_stop_signal` chains a callback in front of uvicorn's
own handler so that the app can end such responses first.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

SIGNALS = (signal.SIGTERM, signal.SIGINT)


@contextmanager
def on_stop_signal(callback: Callable[[], None]) -> Iterator[None]:
    """While inside, SIGTERM/SIGINT first schedule `callback` on the running loop, then
    go to the handler that was there (uvicorn's). Outside the main thread (an app
    served from a test thread) signals cannot be handled, and nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    loop = asyncio.get_running_loop()
    previous: dict[int, Any] = {int(sig): signal.getsignal(sig) for sig in SIGNALS}

    def handler(sig: int, frame: FrameType | None) -> None:
        loop.call_soon_threadsafe(callback)
        before = previous[sig]
        if callable(before):
            before(sig, frame)
        elif before == signal.SIG_DFL:
            signal.signal(sig, signal.SIG_DFL)
            signal.raise_signal(sig)

    for stop in SIGNALS:
        signal.signal(stop, handler)
    try:
        yield
    finally:
        for number, before in previous.items():
            if signal.getsignal(number) is handler:
                signal.signal(number, before)
