"""A workspace at one point (objective, document, items, artifacts, rejections) and the
live one read from a thread's rows.

The states here are plain values: snapshots (`snapshots.py`) capture and restore them,
compare and export read them, and the services that edit the live rows build them.
"""

from __future__ import annotations

import uuid
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import dialect_of
from haico.db.models import Artifact, Conversation, Document
from haico.db.repositories import live as live_repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import workspace as repo
from haico.schemas.workspace import (
    ArtifactSummary,
    DocumentOut,
    PreferenceOut,
    RejectedOut,
    RejectedSurface,
    TodoOut,
    WorkspaceOut,
)


def new_uid() -> str:
    return uuid.uuid4().hex


@dataclass
class PreferenceState:
    uid: str
    text: str
    locked: bool = False
    id: int | None = None


@dataclass
class TodoState:
    uid: str
    text: str
    done: bool = False
    depth: int = 0
    id: int | None = None


@dataclass
class RejectedState:
    """A deleted preference or todo, kept as a decision (see `workspace._delete_item_in`)."""

    uid: str
    surface: RejectedSurface
    text: str
    rejected_after_turn: int

    def to_out(self) -> RejectedOut:
        return RejectedOut(**self.to_json())

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def rejected_from(entry: dict[str, Any]) -> RejectedState:
    """A rejected item from a snapshot's JSON entry or a row's columns."""
    return RejectedState(
        uid=str(entry.get("uid") or ""),
        surface="todo" if entry.get("surface") == "todo" else "preference",
        text=str(entry.get("text") or ""),
        rejected_after_turn=int(entry.get("rejected_after_turn") or 0),
    )


@dataclass
class WorkspaceState:
    """A workspace at one point: live rows or a snapshot, with its artifacts."""

    objective: str | None
    document: DocumentOut | None
    preferences: list[PreferenceState] = field(default_factory=list)
    todos: list[TodoState] = field(default_factory=list)
    artifacts: list[ArtifactSummary] = field(default_factory=list)
    source_thread_id: str = ""
    rejected: list[RejectedState] = field(default_factory=list)

    def item_columns(self) -> dict[str, list[dict[str, Any]]]:
        """The snapshot row's item lists (preferences, todos, rejected) for this state."""
        return {
            "preferences": [
                {"uid": p.uid, "text": p.text, "locked": p.locked} for p in self.preferences
            ],
            "todos": [
                {"uid": t.uid, "text": t.text, "done": t.done, "depth": t.depth} for t in self.todos
            ],
            "rejected": [r.to_json() for r in self.rejected],
        }

    def to_out(self) -> WorkspaceOut:
        return WorkspaceOut(
            objective=self.objective,
            document=self.document,
            preferences=[
                PreferenceOut(id=p.id, uid=p.uid, text=p.text, locked=p.locked, position=i)
                for i, p in enumerate(self.preferences)
            ],
            todos=[
                TodoOut(id=t.id, uid=t.uid, text=t.text, done=t.done, depth=t.depth, position=i)
                for i, t in enumerate(self.todos)
            ],
            artifacts=self.artifacts,
            rejected=[r.to_out() for r in self.rejected],
        )

    def differences(self, other: WorkspaceState) -> list[str]:
        """The surfaces whose content differs from `other` (ids and positions aside)."""
        changed = []
        if self.objective != other.objective:
            changed.append("the objective")
        if self.document != other.document:
            changed.append("the document")
        if [(p.uid, p.text, p.locked) for p in self.preferences] != [
            (p.uid, p.text, p.locked) for p in other.preferences
        ]:
            changed.append("the preferences")
        if [(t.uid, t.text, t.done, t.depth) for t in self.todos] != [
            (t.uid, t.text, t.done, t.depth) for t in other.todos
        ]:
            changed.append("the todos")
        return changed


def artifact_summary(a: Artifact) -> ArtifactSummary:
    return ArtifactSummary(id=a.id, uid=a.uid, turn_index=a.turn_index, kind=a.kind, title=a.title)


async def document_body(s: AsyncSession, doc: Document) -> str:
    """A live document's text: its own, or the stored version it points at."""
    if doc.body_hash is None:
        return doc.content
    return await repo.get_body(s, doc.body_hash) or ""


async def live_state(s: AsyncSession, conv: Conversation) -> WorkspaceState:
    return (await live_with_document(s, conv))[1]


async def thread_and_live_state(
    s: AsyncSession, thread_id: str
) -> tuple[Conversation, WorkspaceState] | None:
    """The thread and its live workspace (None: no such thread); one statement on
    PostgreSQL."""
    if dialect_of(s).is_postgres:
        found = await live_repo.thread_with_live_rows(s, thread_id)
        return None if found is None else (found[0], state_of_rows(*found)[1])
    conv = await threads_repo.get_thread(s, thread_id)
    return None if conv is None else (conv, await live_state(s, conv))


async def live_with_document(
    s: AsyncSession, conv: Conversation
) -> tuple[live_repo.LiveDocument | None, WorkspaceState]:
    """The live rows of `conv` as a state, and its document row (title, body_hash,
    content)."""
    return state_of_rows(conv, await live_repo.live_rows(s, conv.thread_id))


def state_of_rows(
    conv: Conversation, rows: live_repo.LiveRows
) -> tuple[live_repo.LiveDocument | None, WorkspaceState]:
    doc = rows.document
    return doc, WorkspaceState(
        objective=conv.objective,
        document=DocumentOut(title=doc.title, content=doc.content) if doc else None,
        preferences=[PreferenceState(p.uid, p.text, p.locked, p.id) for p in rows.preferences],
        todos=[TodoState(t.uid, t.text, t.done, t.depth, t.id) for t in rows.todos],
        artifacts=[
            ArtifactSummary(id=a.id, uid=a.uid, turn_index=a.turn_index, kind=a.kind, title=a.title)
            for a in rows.artifacts
        ],
        source_thread_id=conv.thread_id,
        rejected=[rejected_from(r._asdict()) for r in rows.rejected],
    )
