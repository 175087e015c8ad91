"""The long-lived handles of a serving process: its settings, storage, agent runtime,
event bus and turn manager.

`main.py` builds them once, when the app starts, and leaves them on `app.state.handles`;
the faces (the REST routers through `api.deps`, the AHP host through its connection
state) read them from there and hand them to the services they call. So a face never
imports the storage or the agent to reach them (`.importlinter`).
"""

from __future__ import annotations

from dataclasses import dataclass

from app.agent.runtime import AgentRuntime
from app.config import Settings
from app.db.engine import Database
from app.events.bus import EventBus
from app.services.turns import TurnManager


@dataclass(frozen=True)
class Handles:
    settings: Settings
    db: Database
    runtime: AgentRuntime
    bus: EventBus
    turns: TurnManager
