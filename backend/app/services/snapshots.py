"""Workspace states and snapshots: the snapshot rule, capture, and copies as of a turn.

The snapshot rule. Snapshot N is the workspace at the *start* of turn N, captured
before the agent acts on it. The workspace *after* turn k is therefore snapshot k+1
when it exists (it also absorbs manual edits made between turns k and k+1); when k is
the thread's latest turn there is no snapshot k+1 yet and the live rows are the
answer. For a branch, turns up to its branch point belong to ancestors, so the
snapshot is looked up in whichever thread of the lineage owns turn k+1. Every as-of
read (restore, branch copy, compare, graph) goes through `restore_source`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.db.dialect import Write, dialect_of
from app.db.models import Artifact, Conversation, Document, RejectedItem, WorkspaceSnapshot
from app.db.repositories import items as items_repo
from app.db.repositories import snapshots as snap_repo
from app.db.repositories import threads as threads_repo
from app.db.repositories import workspace as repo
from app.domain import NodeState
from app.errors import InvalidInput, InvalidTurn, SnapshotMissing
from app.schemas import (
    ArtifactSummary,
    DocumentOut,
    PreferenceOut,
    RejectedOut,
    RejectedSurface,
    TodoOut,
    WorkspaceOut,
)
from app.services.family import Lineage

# 2: items carry their uid. 3: the rejected decisions (`rejected`) are recorded.
SNAPSHOT_FORMAT = 3
MAX_USER_MESSAGE_PREVIEW = 500


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
    return ArtifactSummary(id=a.id, turn_index=a.turn_index, kind=a.kind, title=a.title)


async def document_body(s: AsyncSession, doc: Document) -> str:
    """A live document's text: its own, or the stored version it points at."""
    if doc.body_hash is None:
        return doc.content
    return await repo.get_body(s, doc.body_hash) or ""


async def live_state(s: AsyncSession, conv: Conversation) -> WorkspaceState:
    return (await _live(s, conv))[1]


async def thread_and_live_state(
    s: AsyncSession, thread_id: str
) -> tuple[Conversation, WorkspaceState] | None:
    """The thread and its live workspace (None: no such thread); one statement on
    PostgreSQL."""
    if dialect_of(s).is_postgres:
        found = await repo.thread_with_live_rows(s, thread_id)
        return None if found is None else (found[0], _state_of(*found)[1])
    conv = await threads_repo.get_thread(s, thread_id)
    return None if conv is None else (conv, await live_state(s, conv))


async def _live(
    s: AsyncSession, conv: Conversation
) -> tuple[repo.LiveDocument | None, WorkspaceState]:
    """The live rows of `conv` as a state, and its document row (title, body_hash,
    content)."""
    return _state_of(conv, await repo.live_rows(s, conv.thread_id))


def _state_of(
    conv: Conversation, rows: repo.LiveRows
) -> tuple[repo.LiveDocument | None, WorkspaceState]:
    doc = rows.document
    return doc, WorkspaceState(
        objective=conv.objective,
        document=DocumentOut(title=doc.title, content=doc.content) if doc else None,
        preferences=[PreferenceState(p.uid, p.text, p.locked, p.id) for p in rows.preferences],
        todos=[TodoState(t.uid, t.text, t.done, t.depth, t.id) for t in rows.todos],
        artifacts=[
            ArtifactSummary(id=a.id, turn_index=a.turn_index, kind=a.kind, title=a.title)
            for a in rows.artifacts
        ],
        source_thread_id=conv.thread_id,
        rejected=[rejected_from(r._asdict()) for r in rows.rejected],
    )


def _rejected_state(r: RejectedItem) -> RejectedState:
    surface: RejectedSurface = "todo" if r.surface == "todo" else "preference"
    return RejectedState(r.uid, surface, r.text, r.rejected_after_turn)


def _legacy_uid(snapshot_id: int, kind: str, index: int) -> str:
    return hashlib.sha256(f"{snapshot_id}:{kind}:{index}".encode()).hexdigest()[:32]


async def snapshot_state(
    s: AsyncSession, snap: WorkspaceSnapshot, *, artifacts_up_to: int
) -> WorkspaceState:
    """Read a snapshot row; fields that older formats lack get their defaults."""
    await snap_repo.load_items(s, snap)
    body = await repo.get_body(s, snap.document_hash) if snap.document_hash else None
    document = None
    if snap.document_title is not None or body is not None:
        document = DocumentOut(title=snap.document_title or "", content=body or "")
    prefs = [
        PreferenceState(
            uid=str(p.get("uid") or _legacy_uid(snap.id, "p", i)),
            text=str(p.get("text", "")),
            locked=bool(p.get("locked", False)),
        )
        for i, p in enumerate(snap.preferences or [])
    ]
    todos = [
        TodoState(
            uid=str(t.get("uid") or _legacy_uid(snap.id, "t", i)),
            text=str(t.get("text", "")),
            done=bool(t.get("done", False)),
            depth=int(t.get("depth", 0) or 0),
        )
        for i, t in enumerate(snap.todos or [])
    ]
    arts = await repo.list_artifacts(s, snap.thread_id, max_turn=artifacts_up_to)
    return WorkspaceState(
        objective=snap.objective,
        document=document,
        preferences=prefs,
        todos=todos,
        artifacts=[artifact_summary(a) for a in arts],
        source_thread_id=snap.thread_id,
        # Format 3 on; an older snapshot recorded no rejections.
        rejected=[rejected_from(r) for r in snap.rejected or []],
    )


@dataclass
class RestoreSource:
    """Where the workspace after a turn lives: a thread's live rows or one snapshot."""

    turn: int
    live: Conversation | None = None
    snapshot: WorkspaceSnapshot | None = None

    @property
    def objective(self) -> str | None:
        return (
            self.live.objective if self.live else self.snapshot.objective if self.snapshot else None
        )


async def restore_source(
    s: AsyncSession,
    conv: Conversation,
    turn: int,
    *,
    known: Mapping[int, WorkspaceSnapshot | None] | None = None,
) -> RestoreSource:
    """Apply the snapshot rule: which rows hold the workspace after `turn` on `conv`.

    `known`: `conv`'s light snapshot rows read in this transaction already, by turn
    (None: read, and it has none)."""
    if turn < 0:
        raise InvalidInput("as_of_turn: must be >= 0")
    if turn > conv.turn_index:
        raise InvalidTurn(f"turn {turn} does not exist (the thread is at turn {conv.turn_index})")
    if turn == conv.turn_index:
        return RestoreSource(turn, live=conv)
    lineage = await Lineage.load(s, conv.thread_id)
    source = lineage.fork_source(turn + 1)
    if source is not None:
        # Before its fork point a family's past is its source's: answer from there
        # (never from the fork's own live rows), or not at all.
        src = await threads_repo.get_thread(s, source)
        if src is None or src.deleted_at is not None or src.turn_index < turn:
            raise SnapshotMissing(
                f"the conversation this was forked from no longer has turn {turn}"
            )
        return await restore_source(s, src, turn)
    owner = lineage.owner_of(turn + 1)
    if owner == conv.thread_id and known is not None and turn + 1 in known:
        snap = known[turn + 1]
    else:
        snap = await snap_repo.get_snapshot(s, owner, turn + 1, light=True)
    if snap is None:
        # A linear host pruned the owner's turns after `turn` and brought its live rows
        # back to the workspace after `turn` (`pruning.prune_in`): with no newer
        # snapshot of the owner left, its live rows are the answer.
        owner_conv = await threads_repo.get_thread(s, owner)
        if (
            owner_conv is not None
            and owner_conv.turn_index > turn
            and not await snap_repo.has_snapshot_after(s, owner, turn)
        ):
            return RestoreSource(turn, live=owner_conv)
        raise SnapshotMissing(f"no snapshot captured the workspace after turn {turn}")
    return RestoreSource(turn, snapshot=snap)


async def resolve_restore_state(s: AsyncSession, conv: Conversation, turn: int) -> WorkspaceState:
    """The workspace as it stood after `turn` on `conv`'s lineage (see the module doc),
    with only the decisions rejected by then."""
    state = await state_of(s, await restore_source(s, conv, turn))
    state.rejected = [r for r in state.rejected if r.rejected_after_turn <= turn]
    return state


async def state_of(s: AsyncSession, source: RestoreSource) -> WorkspaceState:
    """Read the workspace a `RestoreSource` points at."""
    if source.live is not None:
        return await live_state(s, source.live)
    assert source.snapshot is not None
    return await snapshot_state(s, source.snapshot, artifacts_up_to=source.turn)


async def copy_as_of_in(s: AsyncSession, source: RestoreSource, target: Conversation) -> None:
    """Copy the workspace after `source.turn` into the empty thread `target`, in SQL.

    Rows go from table to table (or out of the snapshot's JSON) without passing
    through Python, so the cost does not grow with the document or the number of
    items. Snapshots from before items had uids take the Python path for their
    defaults.
    """
    target.objective = source.objective
    snap = source.snapshot
    # Format 2 rows lack only `rejected`, which the fast path reads as none.
    if snap is not None and snap.format < 2:
        state = await snapshot_state(s, snap, artifacts_up_to=source.turn)
        await s.flush()
        await replace_workspace_in(s, target, state, fresh=True)
        await repo.copy_artifacts(s, target.thread_id, source=snap.thread_id, up_to=source.turn)
        return
    await s.flush()
    if source.live is not None:
        src = source.live.thread_id
        await repo.copy_live_rows(s, source=src, target=target.thread_id)
        # The live rows of the thread at its tip: every artifact it has.
        await repo.copy_artifacts(s, target.thread_id, source=src, up_to=source.live.turn_index)
        return
    assert snap is not None
    if snap.document_title is not None or snap.document_hash is not None:
        # The restored document points at the snapshot's stored body: nothing to copy.
        s.add(
            Document(
                thread_id=target.thread_id,
                title=snap.document_title or "",
                content="",
                body_hash=snap.document_hash,
            )
        )
        await s.flush()
    await snap_repo.copy_items_into(s, snap, target.thread_id)
    # Preferences and todos were copied in SQL: only the rejected list is read here.
    await snap_repo.load_items(s, snap, frozenset({"rejected"}))
    await _insert_rejected(
        s, target.thread_id, [rejected_from(r) for r in snap.rejected or []], up_to=source.turn
    )
    await repo.copy_artifacts(s, target.thread_id, source=snap.thread_id, up_to=source.turn)


async def capture_snapshot(
    s: AsyncSession,
    conv: Conversation,
    *,
    turn_index: int,
    user_message: str,
    live: repo.LiveRows | None = None,
) -> tuple[list[Write], WorkspaceState]:
    """Snapshot `turn_index` from the live rows (the start of that turn), read here
    unless the caller read them (`live`): the writes that store it (the document's
    body first when it is not stored yet; for `execute_all`), and the live workspace
    it was taken from, artifacts included (the turn's agent starts from that
    workspace, without reading it again).

    The document is read once: an unedited restored document already is a stored
    version and keeps its hash without its text being stored again."""
    doc, state = await _live(s, conv) if live is None else _state_of(conv, live)
    writes: list[Write] = []
    digest = None
    if doc is not None:
        digest = doc.body_hash
        if digest is None:
            write = repo.body_write(s, doc.content)
            writes.append(write)
            digest = write[1]["b_hash"]
    writes.append(
        snap_repo.snapshot_write(
            thread_id=conv.thread_id,
            turn_index=turn_index,
            format=SNAPSHOT_FORMAT,
            objective=conv.objective,
            document_title=doc.title if doc is not None else None,
            document_hash=digest,
            **state.item_columns(),
            user_message=user_message[:MAX_USER_MESSAGE_PREVIEW],
            state=NodeState.RUNNING,
        )
    )
    return writes, state


async def replace_workspace_in(
    s: AsyncSession, conv: Conversation, state: WorkspaceState, *, fresh: bool = False
) -> None:
    """Overwrite the live rows of `conv` with `state` (items keep their uids).

    Items are written with one multi-row INSERT each; `fresh` says the thread has no
    rows yet (a new branch or draft), which saves the deletes and the document read.
    """
    tid = conv.thread_id
    if not fresh:
        await items_repo.clear_items(s, tid)
    conv.objective = state.objective
    doc = None if fresh else await repo.get_document(s, tid)
    if state.document is None:
        if doc is not None:
            await s.delete(doc)
    elif doc is None:
        s.add(Document(thread_id=tid, title=state.document.title, content=state.document.content))
    else:
        doc.title = state.document.title
        doc.content = state.document.content
        doc.body_hash = None
    await s.flush()
    await items_repo.insert_preferences(
        s,
        [
            {"uid": p.uid, "thread_id": tid, "text": p.text, "locked": p.locked, "position": i}
            for i, p in enumerate(state.preferences)
        ],
    )
    await items_repo.insert_todos(
        s,
        [
            {
                "uid": t.uid,
                "thread_id": tid,
                "text": t.text,
                "done": t.done,
                "depth": t.depth,
                "position": i,
            }
            for i, t in enumerate(state.todos)
        ],
    )
    await _insert_rejected(s, tid, state.rejected)


async def _insert_rejected(
    s: AsyncSession, thread_id: str, items: list[RejectedState], *, up_to: int | None = None
) -> None:
    await repo.insert_rejected(
        s,
        [
            {"thread_id": thread_id, **r.to_json()}
            for r in items
            if up_to is None or r.rejected_after_turn <= up_to
        ],
    )
