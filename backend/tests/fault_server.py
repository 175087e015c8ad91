"""`python -m tests.fault_server PORT STEP`: `haico serve` whose process SIGKILLs
itself when a multi-step write reaches STEP (a name passed to the Database's fault
seam: "copy", "seed", "activate", "promote", "validate", "lease", "detect", "head",
"publish", "restore"), but only in a request that carries the header
`x-haico-test-kill: 1`: the requests before it build the family the write then
works on. Settings come from the environment, as for `haico serve`.
"""

from __future__ import annotations

import contextvars
import os
import signal
import sys
from typing import Any

import uvicorn

from app.cli import migrate
from app.config import get_settings
from app.main import create_app

KILL_HEADER = "x-haico-test-kill"
# Set for the duration of a request that carries KILL_HEADER (and the tasks it starts).
_doomed: contextvars.ContextVar[bool] = contextvars.ContextVar("doomed", default=False)


def main(port: int, step: str) -> None:
    settings = get_settings()
    migrate(settings, local_user=True)
    app = create_app(settings)

    async def kill_at(name: str) -> None:
        if name == step and _doomed.get():
            os.kill(os.getpid(), signal.SIGKILL)

    async def armed(scope: Any, receive: Any, send: Any) -> None:
        # The app's state exists once its lifespan ran: arm the seam on first use.
        db = getattr(app.state, "db", None)
        if db is not None and db.faults is not kill_at:
            db.faults = kill_at
        if scope["type"] == "http" and (KILL_HEADER.encode(), b"1") in scope["headers"]:
            _doomed.set(True)
        await app(scope, receive, send)

    uvicorn.run(armed, host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    main(int(sys.argv[1]), sys.argv[2])
