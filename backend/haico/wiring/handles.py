"""The long-lived handles of a serving process: its settings, storage, agent runtime,
event bus, turn manager and join queue.

`main.py` builds them once, when the app starts, and leaves them on `app.state.handles`;
the faces (the REST routers through `api.deps`, the AHP host through its connection
state) read them from there and hand them to the services they call. So a face never
imports the storage or the agent to reach them (`.importlinter`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.events.bus import EventBus
from haico.process.stream_slots import StreamSlots
from haico.services.studies.join_queue import JoinQueue
from haico.services.turns.manager import TurnManager


@dataclass(frozen=True)
class Handles:
    settings: Settings
    db: Database
    runtime: AgentRuntime
    bus: EventBus
    turns: TurnManager
    # Concurrent joins of a study, made in batches (`services.studies.join_queue`).
    joins: JoinQueue
    # The open event streams and AHP sockets of each user (`HAICO_MAX_STREAMS_PER_USER`).
    streams: StreamSlots = field(default_factory=StreamSlots)
