"""Request dependencies: the database, settings, the caller, and the process's services
(agent runtime, event bus, turn manager), each as an `Annotated` alias."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from app.agent.runtime import AgentRuntime
from app.config import Settings
from app.db.engine import Database
from app.events.bus import EventBus
from app.schemas import NO_NUL
from app.services import users
from app.services.turns import TurnManager
from app.services.users import Principal


async def get_db(request: Request) -> Database:
    db: Database = request.app.state.db
    return db


async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def bearer_token(authorization: str | None, query_token: str | None = None) -> str | None:
    if authorization and authorization.lower().startswith("bearer "):
        return authorization[7:].strip() or None
    return query_token


async def resolve_principal(
    settings: Settings, db: Database, local: Principal | None, token: str | None
) -> Principal:
    """The caller: the local user when auth is off, else the owner of the bearer token."""
    if settings.auth == "none":
        assert local is not None
        return local
    return await users.authenticate(db, token=token)


async def current_user(request: Request) -> Principal:
    token = bearer_token(request.headers.get("authorization"))
    return await resolve_principal(
        request.app.state.settings, request.app.state.db, request.app.state.local_user, token
    )


DbDep = Annotated[Database, Depends(get_db)]
SettingsDep = Annotated[Settings, Depends(get_settings)]
CurrentUser = Annotated[Principal, Depends(current_user)]


async def get_runtime(request: Request) -> AgentRuntime:
    runtime: AgentRuntime = request.app.state.runtime
    return runtime


async def get_bus(request: Request) -> EventBus:
    bus: EventBus = request.app.state.bus
    return bus


async def get_turns(request: Request) -> TurnManager:
    turns: TurnManager = request.app.state.turns
    return turns


RuntimeDep = Annotated[AgentRuntime, Depends(get_runtime)]
BusDep = Annotated[EventBus, Depends(get_bus)]
TurnsDep = Annotated[TurnManager, Depends(get_turns)]


# Path parameters every router shares (and the largest id a query may name). No NUL in
# a thread id and no number beyond what the columns hold: the database would fail
# instead of answering 404.
MAX_ID = 2**63 - 1
ThreadId = Annotated[str, Path(max_length=200, pattern=NO_NUL)]
ItemId = Annotated[int, Path(ge=0, le=MAX_ID)]
