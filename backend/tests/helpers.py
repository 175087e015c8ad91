"""Test helpers shared by several modules."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import event

from haico.db.dialect import Write
from haico.db.engine import Database
from haico.db.models import Conversation, ConversationBranch
from haico.db.repositories import heads as heads_repo
from haico.domain import BranchStatus, new_thread_id, now
from haico.schemas.conversations import ConversationOut
from haico.services.access import users
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families import conversations
from haico.services.workspace import edits as workspace


@dataclass
class Seeded:
    thread_id: str
    pref_id: int
    todo_id: int
    artifact_id: int


def run_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`haico <args>` as a process on the database `env` names; its output as text."""
    return subprocess.run(
        [sys.executable, "-m", "haico.cli.main", *args],
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=180,
    )


def as_user(user_id: int) -> Principal:
    """User `user_id` as a caller (tests that know only a row's id)."""
    return Principal(user_id, f"user {user_id}")


def db_of(app: FastAPI) -> Database:
    db: Database = app.state.db
    return db


async def listed_conversations(client: httpx.AsyncClient) -> dict[str, dict[str, object]]:
    """The caller's conversation list, by thread id."""
    return {c["thread_id"]: c for c in (await client.get("/api/conversations")).json()}


async def local_and_strangers_thread(app: FastAPI) -> Seeded:
    """Auth off (the anonymous caller is a fresh local user), and a conversation of
    another user's."""
    app.state.settings.auth = "none"
    app.state.local_user = await users.ensure_local(db_of(app), name=f"l-{uuid.uuid4().hex[:8]}")
    stranger, _ = await users.create(db_of(app), name=f"s-{uuid.uuid4().hex[:8]}")
    return await seed_conversation(app, stranger)


async def seed_conversation(app: FastAPI, owner: Principal) -> Seeded:
    """A conversation of `owner` with one preference, todo and artifact."""
    db = db_of(app)
    conv: ConversationOut = await conversations.create(db, principal=owner, title="seed")
    pref = await workspace.add_preference(
        db, principal=owner, thread_id=conv.thread_id, text="p", locked=False
    )
    todo = await workspace.add_todo(
        db, principal=owner, thread_id=conv.thread_id, text="t", done=False, depth=0
    )
    async with db.transaction() as s:
        row, _ = await conversations.get_for(s, owner, thread_id=conv.thread_id, need=Role.OWNER)
        art = await workspace.create_artifact_in(s, row, title="a", content="body")
        art_id = art.id
    assert pref.id is not None and todo.id is not None
    return Seeded(conv.thread_id, pref.id, todo.id, art_id)


async def add_branch_row(
    db: Database,
    parent: str,
    status: BranchStatus,
    *,
    age: timedelta = timedelta(0),
    at_turn: int = 1,
) -> str:
    """A branch of `parent` at `at_turn`, created `age` ago and left in `status`, as a
    crash between a branch's phases or a bug could leave it (a `pending` branch, a
    stray `draft`): its conversation and branch rows, nothing else. Its thread id."""
    thread_id = new_thread_id()
    stamp = now() - age
    async with db.transaction() as s:
        src = await s.get(Conversation, parent)
        assert src is not None
        s.add(
            Conversation(
                thread_id=thread_id,
                user_id=src.user_id,
                root_thread_id=src.root_thread_id,
                title="x",
                turn_index=at_turn,
                created_at=stamp,
                updated_at=stamp,
            )
        )
        await s.flush()
        s.add(
            ConversationBranch(
                thread_id=thread_id,
                parent_thread_id=parent,
                branch_point_turn=at_turn,
                status=status,
                created_at=stamp,
            )
        )
    return thread_id


@contextmanager
def armed_faults(db: Database, key: str) -> Iterator[dict[str, Any]]:
    """Give `db` a fault seam: setting `armed[key]` to a step name makes that step
    raise; `armed["seen"]` records the steps reached. Restored on exit."""
    armed: dict[str, Any] = {key: None, "seen": []}

    async def hook(step: str) -> None:
        armed["seen"].append(step)
        if armed[key] == step:
            raise RuntimeError(f"injected failure at {step}")

    original = db.faults
    db.faults = hook
    try:
        yield armed
    finally:
        db.faults = original


def counted_calls(monkeypatch: pytest.MonkeyPatch, module: object, name: str) -> list[int]:
    """Count the calls of the coroutine function `module.name` (it still runs): one
    entry per call in the list returned."""
    calls: list[int] = []
    original = getattr(module, name)

    async def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return await original(*args, **kwargs)

    monkeypatch.setattr(module, name, counted)
    return calls


@contextmanager
def recorded_sql(db: Database) -> Iterator[list[str]]:
    """The SQL statements `db` runs inside the block: through SQLAlchemy (its engine's
    `before_cursor_execute`) and on the driver directly (`Database.driver`)."""
    statements: list[str] = []

    def record(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    engine = db.engine.sync_engine
    event.listen(engine, "before_cursor_execute", record)
    db.statement_listeners.append(statements.append)
    try:
        yield statements
    finally:
        db.statement_listeners.remove(statements.append)
        event.remove(engine, "before_cursor_execute", record)


def lease_write(tid: str, process: str = "p1") -> Write:
    """The write that takes family `tid`'s lease for turn 1, held by `process`."""
    return heads_repo.lease_take(
        root_thread_id=tid,
        thread_id=tid,
        turn_index=1,
        parent_turn_id=None,
        user_message="hello",
        process_id=process,
    )
