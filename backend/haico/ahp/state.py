"""What one AHP connection knows, shared by the modules that act on it: the services
it calls, the version agreed, its subscriptions and where its delivery stands."""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from starlette.websockets import WebSocket

from haico.ahp.adapter import Adapter
from haico.ahp.outbox import Intake, Outbox
from haico.ahp.protocol import Json, action_message
from haico.services.access.principal import Principal
from haico.services.coding.blind import Gate
from haico.wiring.handles import Handles


class ConnectionState:
    # Every connection this process serves right now (for tests and diagnostics).
    live: ClassVar[set[ConnectionState]] = set()

    def __init__(self, ws: WebSocket, handles: Handles, principal: Principal) -> None:
        self.ws = ws
        # The process's handles, as main.py wired them (`wiring.handles`).
        self.settings = handles.settings
        self.db = handles.db
        self.bus = handles.bus
        self.turns = handles.turns
        self.runtime = handles.runtime
        self.user = principal
        self.blind = Gate(principal)  # which coding actions reach it (`coding.blind`)
        self.key = self.settings.signing_key()
        self.adapter: Adapter | None = None
        self.client_id = ""
        self.subs: dict[str, int] = {}  # channel -> serverSeq its state stands at
        self.my_roots: set[str] = set()  # families this client was shown
        self.seen_seq = 0  # the last entry the pump handled
        self.origins: dict[int, Json] = {}  # serverSeq -> origin of a client's action
        self.lock = asyncio.Lock()
        self.out = Outbox(ws, self.settings.ahp_queue_size, self.settings.ahp_queue_bytes)
        self.intake = Intake(
            self.settings.ahp_max_frame_bytes, self.settings.ahp_requests_per_second
        )
        self.progress = asyncio.Event()  # set whenever the pump handled an entry
        self.pump: asyncio.Task[None] | None = None
        self.tasks: set[asyncio.Task[Any]] = set()


def reject(conn: ConnectionState, channel: Any, action: Json, origin: Json, reason: str) -> None:
    """A client's dispatched action the host refused, echoed to its sender with
    `rejectionReason`."""
    envelope = {
        "channel": channel,
        "action": action,
        "serverSeq": conn.seen_seq,
        "origin": origin,
        "rejectionReason": reason,
    }
    conn.out.send(action_message(envelope))
