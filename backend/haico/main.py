"""The FastAPI application: `create_app()` wires settings, storage and routers."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from fastapi.responses import HTMLResponse

from haico.agent.checkpointer import setup_checkpointer
from haico.agent.runtime import AgentRuntime
from haico.ahp.router import router as ahp_router
from haico.api import (
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
from haico.api import coding as coding_api
from haico.api import datasets as datasets_api
from haico.api import errors as api_errors
from haico.api import graph as graph_api
from haico.api import ledger as ledger_api
from haico.api import merge as merge_api
from haico.api import methods as api_methods
from haico.api import shares as shares_api
from haico.api import studies as studies_api
from haico.api import study_reports as study_reports_api
from haico.api.compression import ApiCompressionMiddleware
from haico.api.disconnects import ClientGoneMiddleware
from haico.api.headers import SecurityHeadersMiddleware
from haico.api.limits import BodyLimitMiddleware
from haico.api.links import add_links
from haico.api.rate_limit import RateLimitMiddleware
from haico.config import Settings, get_settings
from haico.db.engine import Database, FaultPoint, no_faults
from haico.events.bus import EventBus
from haico.paths import studio_dir
from haico.process import background
from haico.process.allocator import report_memory
from haico.process.shutdown import on_stop_signal
from haico.process.stream_slots import StreamSlots
from haico.services.access import users
from haico.services.studies.join_queue import JoinQueue
from haico.services.turns.agent_port import AgentWorkspace
from haico.services.turns.manager import TurnManager
from haico.wiring.handles import Handles
from haico.wiring.janitor import Janitor

log = logging.getLogger("haico")

# The package's own copy in an installed wheel, else a clone's frontend/out (`haico.paths`).
STUDIO_DIR = studio_dir()

PLACEHOLDER = """<!doctype html><html><head><meta charset="utf-8"><title>HAICO</title></head>
<body style="font-family:system-ui;margin:3rem;max-width:40rem">
<h1>HAICO</h1><p>The API is running under <code>/api</code>
(its OpenAPI document: <a href="/openapi.json">/openapi.json</a>).
The studio has not been built yet.</p>
<p>In a clone, <code>make studio</code> builds it (Node.js 20 or later); restart
<code>haico serve</code> and it is served here. Or install the wheel, which carries it:
<code>make wheel</code>, then <code>pip install dist/haico-*.whl</code>.</p></body></html>"""


def _with_links(app: FastAPI) -> None:
    """The OpenAPI document carries the links between operations (`haico.api.links`)."""
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
    """The app; `faults` is the database's fault seam (`haico.db.faults`: tests only)."""
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
        joins = JoinQueue(db)
        app.state.handles = Handles(
            settings, db, runtime, bus, turns, joins, StreamSlots(settings.max_streams_per_user)
        )
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
            await joins.close()
            await turns.close()
            await bus.close()
            await runtime.close()
            await db.dispose()

    # No `/docs` or `/redoc`: FastAPI's pages load Swagger UI and ReDoc from a CDN,
    # on this origin and without an integrity check. The document itself is at
    # `/openapi.json` (and rendered in docs/rest.md).
    app = FastAPI(title="HAICO", version="0.1.0", lifespan=lifespan, docs_url=None, redoc_url=None)
    # Innermost: the answers are compressed as the routes give them (event streams not).
    app.add_middleware(ApiCompressionMiddleware)
    app.add_middleware(ClientGoneMiddleware)
    app.add_middleware(
        BodyLimitMiddleware,
        max_bytes=settings.max_body_bytes,
        max_import_bytes=settings.max_import_bytes,
    )
    # Added after the body limit, so it runs before it: a limited caller costs no body read.
    app.add_middleware(
        RateLimitMiddleware,
        per_second=settings.rate_limit_per_second,
        burst=settings.rate_limit_burst,
    )
    # Outermost: every answer carries the security headers, a 413 or a 429 too.
    app.add_middleware(SecurityHeadersMiddleware)
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
    app.include_router(shares_api.router)
    app.include_router(studies_api.router)
    app.include_router(study_reports_api.router)
    app.include_router(coding_api.router)
    app.include_router(datasets_api.router)
    app.include_router(ahp_router)

    if STUDIO_DIR.is_dir():
        app.mount("/", api_methods.StudioFiles(STUDIO_DIR), name="studio")
    else:

        @app.get("/", include_in_schema=False)
        async def placeholder() -> HTMLResponse:
            return HTMLResponse(PLACEHOLDER)

    return app
