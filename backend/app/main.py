"""The FastAPI application: `create_app()` wires settings, storage and routers."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from app import background
from app.agent.checkpointer import setup_checkpointer
from app.agent.runtime import AgentRuntime
from app.ahp.router import router as ahp_router
from app.allocator import report_memory
from app.api import (
    big_trees,
    branching,
    conversations,
    health,
    history,
    research,
    turns,
    whatif,
    workspace,
)
from app.api import errors as api_errors
from app.api import graph as graph_api
from app.api import ledger as ledger_api
from app.api import merge as merge_api
from app.api import methods as api_methods
from app.api.disconnects import ClientGoneMiddleware
from app.api.limits import BodyLimitMiddleware
from app.api.links import add_links
from app.api.rate_limit import RateLimitMiddleware
from app.config import Settings, get_settings
from app.db.engine import Database, FaultPoint, no_faults
from app.events.bus import EventBus
from app.services import users
from app.services.agent_workspace import AgentWorkspace
from app.services.handles import Handles
from app.services.janitor import Janitor
from app.services.turns import TurnManager
from app.shutdown import on_stop_signal

log = logging.getLogger("haico")

STUDIO_DIR = Path(__file__).resolve().parent.parent.parent / "frontend" / "out"

PLACEHOLDER = """<!doctype html><html><head><meta charset="utf-8"><title>HAICO</title></head>
<body style="font-family:system-ui;margin:3rem;max-width:40rem">
<h1>HAICO</h1><p>The API is running under <code>/api</code>
(<a href="/docs">OpenAPI docs</a>). The studio has not been built yet.</p></body></html>"""


def _with_links(app: FastAPI) -> None:
    """The OpenAPI document carries the links between operations (`app.api.links`)."""
    plain = app.openapi

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            add_links(plain())
        return app.openapi_schema or plain()

    app.openapi = openapi  # type: ignore[method-assign]


def quiet_collector(settings: Settings) -> None:
    """Once the process is wired up: what is alive then leaves the garbage collector's
    reach, and its thresholds become the serving ones (`gc_freeze`, `gc_thresholds`)."""
    if settings.gc_freeze:
        gc.collect()
        gc.freeze()
        gc.set_threshold(*settings.gc_thresholds)


def create_app(settings: Settings | None = None, *, faults: FaultPoint = no_faults) -> FastAPI:
    """The app; `faults` is the database's fault seam (`app.db.faults`: tests only)."""
    settings = settings or get_settings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
        db = Database(
            settings.sql_url,
            limits=settings.limits(),
            pool=(settings.db_pool_size, settings.db_pool_overflow),
            faults=faults,
        )
        app.state.db = db
        app.state.settings = settings
        app.state.local_user = None
        if settings.auth == "none":
            app.state.local_user = await users.ensure_local(db, name=settings.local_user_name)
        # The checkpointer's own tables: created here on start, never per request.
        await setup_checkpointer(settings)
        runtime = AgentRuntime(settings, AgentWorkspace(db))
        await runtime.start()
        app.state.runtime = runtime
        bus = EventBus(settings, db)
        await bus.start()
        app.state.bus = bus
        turns = TurnManager(settings, db, runtime, bus)
        await turns.start()
        app.state.turns = turns
        # What the faces are handed (`api.deps`, the AHP host). The parts stay on
        # `app.state` one by one too, for tests and tools.
        app.state.handles = Handles(settings, db, runtime, bus, turns)
        janitor = Janitor(settings, db, runtime)
        janitor.start()
        quiet_collector(settings)
        every = settings.memory_report_seconds
        reporter = asyncio.create_task(report_memory(every)) if every > 0 else None
        try:
            # A stop signal ends the event streams first, so that uvicorn's wait for
            # open responses is short.
            with on_stop_signal(bus.end_streams):
                yield
        finally:
            await background.stop(reporter)
            await janitor.close()
            await turns.close()
            await bus.close()
            await runtime.close()
            await db.dispose()

    app = FastAPI(title="HAICO", version="0.1.0", lifespan=lifespan)
    app.add_middleware(ClientGoneMiddleware)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        max_import_bytes=settings.max_import_bytes,
    )
    # Added last, so it runs first: a limited caller costs no body read.
    app.add_middleware(
        RateLimitMiddleware,
        per_second=settings.rate_limit_per_second,
        burst=settings.rate_limit_burst,
    )
    api_errors.install(app)
    api_methods.install(app)
    _with_links(app)
    app.include_router(health.router)
    app.include_router(conversations.router)
    app.include_router(workspace.router)
    app.include_router(turns.router)
    app.include_router(branching.router)
    app.include_router(history.router)
    app.include_router(graph_api.router)
    app.include_router(research.router)
    app.include_router(ledger_api.router)
    app.include_router(merge_api.router)
    app.include_router(big_trees.router)
    app.include_router(whatif.router)
    app.include_router(ahp_router)

    if STUDIO_DIR.is_dir():
        app.mount("/", api_methods.StudioFiles(STUDIO_DIR), name="studio")
    else:

        @app.get("/", include_in_schema=False)
        async def placeholder() -> HTMLResponse:
            return HTMLResponse(PLACEHOLDER)

    return app
