"""`python -m tests.fault_server PORT STEP`: `haico serve` whose process SIGKILLs
itself when a multi-step write reaches STEP (an `haico.db.faults.Step` passed to the
Database's fault seam), but only in a request that carries the header
`x-haico-test-kill: 1`: the requests before it build the family the write then
works on. A step no request reaches (`UNASKED`: the stale-turn sweep, which the
server runs at start and then in the background) kills whenever it is reached.
Settings come from the environment, as for `haico serve`.
"""

from __future__ import annotations

import contextvars
import os
import signal
import sys
from typing import Any

import uvicorn

from haico.cli.schema import migrate
from haico.config import get_settings
from haico.db.faults import Seam, Step
from haico.main import create_app

KILL_HEADER = "x-haico-test-kill"
UNASKED = frozenset({Step.SWEEP})
# Set for the duration of a request that carries KILL_HEADER (and the tasks it starts).
_doomed: contextvars.ContextVar[bool] = contextvars.ContextVar("doomed", default=False)


def main(port: int, step: Step) -> None:
    settings = get_settings()
    migrate(settings, local_user=True)

    async def kill_at(name: Seam) -> None:
        if name == step and (_doomed.get() or step in UNASKED):
            os.kill(os.getpid(), signal.SIGKILL)

    app = create_app(settings, faults=kill_at)

    async def armed(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and (KILL_HEADER.encode(), b"1") in scope["headers"]:
            _doomed.set(True)
        await app(scope, receive, send)

    uvicorn.run(armed, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]), Step(sys.argv[2]))
