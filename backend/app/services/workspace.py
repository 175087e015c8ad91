"""The workspace: live edits, snapshots, and the one as-of read (`resolve_restore_state`).

The snapshot rule. Snapshot N is the workspace at the *start* of turn N, captured
before the agent acts on it. The workspace *after* turn k is therefore snapshot k+1
when it exists (it also absorbs manual edits made between turns k and k+1); when k is
the thread's latest turn there is no snapshot k+1 yet and the live rows are the
answer. For a branch, turns up to its branch point belong to ancestors, so the
snapshot is looked up in whichever thread of the lineage owns turn k+1. Every as-of
read (restore, branch copy, compare, graph) goes through `resolve_restore_state`.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from sqlalchemy import delete, insert, literal, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.engine import Database
from app.db.models import (
    Artifact,
    Conversation,
    Document,
    DocumentBody,
    Preference,
    Todo,
    WorkspaceSnapshot,
)
from app.db.repositories import conversations as conv_repo
from app.db.repositories import workspace as repo
from app.errors import InvalidInput, InvalidTurn, NotFound, SnapshotMissing
from app.schemas import (
    ArtifactOut,
    ArtifactSummary,
    DocumentOut,
    PreferenceOut,
    PreferencePatch,
    TodoOut,
    TodoPatch,
    WorkspaceOut,
)
from app.services import conversations as conversations_service
from app.services.conversations import get_owned, touch

SNAPSHOT_FORMAT = 2
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
class WorkspaceState:
    """A workspace at one point: live rows or a snapshot, with its artifacts."""

    objective: str | None
    document: DocumentOut | None
    preferences: list[PreferenceState] = field(default_factory=list)
    todos: list[TodoState] = field(default_factory=list)
    artifacts: list[ArtifactSummary] = field(default_factory=list)
    source_thread_id: str = ""

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
        )


def _artifact_summary(a: Artifact) -> ArtifactSummary:
    return ArtifactSummary(id=a.id, turn_index=a.turn_index, kind=a.kind, title=a.title)


async def document_body(session: AsyncSession, doc: Document) -> str:
    """A live document's text: its own, or the stored version it points at."""
    if doc.body_hash is None:
        return doc.content
    return await repo.get_body(session, doc.body_hash) or ""


async def live_state(session: AsyncSession, conv: Conversation) -> WorkspaceState:
    doc = await repo.get_document(session, conv.thread_id)
    prefs = await repo.list_preferences(session, conv.thread_id)
    todos = await repo.list_todos(session, conv.thread_id)
    arts = await repo.list_artifacts(session, conv.thread_id)
    return WorkspaceState(
        objective=conv.objective,
        document=(
            DocumentOut(title=doc.title, content=await document_body(session, doc)) if doc else None
        ),
        preferences=[PreferenceState(p.uid, p.text, p.locked, p.id) for p in prefs],
        todos=[TodoState(t.uid, t.text, t.done, t.depth, t.id) for t in todos],
        artifacts=[_artifact_summary(a) for a in arts],
        source_thread_id=conv.thread_id,
    )


def _legacy_uid(snapshot_id: int, kind: str, index: int) -> str:
    return hashlib.sha256(f"{snapshot_id}:{kind}:{index}".encode()).hexdigest()[:32]


async def snapshot_state(
    session: AsyncSession, snap: WorkspaceSnapshot, *, artifacts_up_to: int
) -> WorkspaceState:
    """Read a snapshot row; fields that older formats lack get their defaults."""
    await repo.load_items(session, snap)
    body = await repo.get_body(session, snap.document_hash) if snap.document_hash else None
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
    arts = await repo.list_artifacts(session, snap.thread_id, max_turn=artifacts_up_to)
    return WorkspaceState(
        objective=snap.objective,
        document=document,
        preferences=prefs,
        todos=todos,
        artifacts=[_artifact_summary(a) for a in arts],
        source_thread_id=snap.thread_id,
    )


async def owner_of_turn(session: AsyncSession, thread_id: str, turn: int) -> str:
    """The thread in `thread_id`'s lineage that owns node `turn` (turn >= 1)."""
    for entry in await conv_repo.lineage(session, thread_id):
        if turn > entry.branch_point_turn or entry.parent_thread_id is None:
            return entry.thread_id
    return thread_id


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


async def restore_source(session: AsyncSession, conv: Conversation, turn: int) -> RestoreSource:
    """Apply the snapshot rule: which rows hold the workspace after `turn` on `conv`."""
    if turn < 0:
        raise InvalidInput("as_of_turn: must be >= 0")
    if turn > conv.turn_index:
        raise InvalidTurn(f"turn {turn} does not exist (the thread is at turn {conv.turn_index})")
    if turn == conv.turn_index:
        return RestoreSource(turn, live=conv)
    owner = await owner_of_turn(session, conv.thread_id, turn + 1)
    snap = await repo.get_snapshot(session, owner, turn + 1, light=True)
    if snap is None:
        # A linear host pruned the owner's turns after `turn` and brought its live rows
        # back to the workspace after `turn` (`history.prune_in`): with no newer
        # snapshot of the owner left, its live rows are the answer.
        owner_conv = await session.get(Conversation, owner)
        newer = await session.scalar(
            select(WorkspaceSnapshot.turn_index)
            .where(WorkspaceSnapshot.thread_id == owner, WorkspaceSnapshot.turn_index > turn)
            .limit(1)
        )
        if owner_conv is not None and owner_conv.turn_index > turn and newer is None:
            return RestoreSource(turn, live=owner_conv)
        raise SnapshotMissing(f"no snapshot captured the workspace after turn {turn}")
    return RestoreSource(turn, snapshot=snap)


async def resolve_restore_state(
    session: AsyncSession, conv: Conversation, turn: int
) -> WorkspaceState:
    """The workspace as it stood after `turn` on `conv`'s lineage (see the module doc)."""
    return await state_of(session, await restore_source(session, conv, turn))


async def state_of(session: AsyncSession, source: RestoreSource) -> WorkspaceState:
    """Read the workspace a `RestoreSource` points at."""
    if source.live is not None:
        return await live_state(session, source.live)
    assert source.snapshot is not None
    return await snapshot_state(session, source.snapshot, artifacts_up_to=source.turn)


_PG_ITEMS = {
    "preferences": (
        "INSERT INTO preferences (uid, thread_id, text, locked, position) "
        "SELECT e->>'uid', :t, e->>'text', COALESCE((e->>'locked')::boolean, false), o - 1 "
        "FROM workspace_snapshots s, "
        "jsonb_array_elements(s.preferences) WITH ORDINALITY AS x(e, o) WHERE s.id = :sid"
    ),
    "todos": (
        "INSERT INTO todos (uid, thread_id, text, done, depth, position) "
        "SELECT e->>'uid', :t, e->>'text', COALESCE((e->>'done')::boolean, false), "
        "COALESCE((e->>'depth')::int, 0), o - 1 "
        "FROM workspace_snapshots s, jsonb_array_elements(s.todos) WITH ORDINALITY AS x(e, o) "
        "WHERE s.id = :sid"
    ),
}
_SQLITE_ITEMS = {
    "preferences": (
        "INSERT INTO preferences (uid, thread_id, text, locked, position) "
        "SELECT json_extract(j.value, '$.uid'), :t, json_extract(j.value, '$.text'), "
        "COALESCE(json_extract(j.value, '$.locked'), 0), CAST(j.key AS INTEGER) "
        "FROM workspace_snapshots s, json_each(s.preferences) j WHERE s.id = :sid"
    ),
    "todos": (
        "INSERT INTO todos (uid, thread_id, text, done, depth, position) "
        "SELECT json_extract(j.value, '$.uid'), :t, json_extract(j.value, '$.text'), "
        "COALESCE(json_extract(j.value, '$.done'), 0), "
        "COALESCE(json_extract(j.value, '$.depth'), 0), CAST(j.key AS INTEGER) "
        "FROM workspace_snapshots s, json_each(s.todos) j WHERE s.id = :sid"
    ),
}


async def copy_as_of_in(session: AsyncSession, source: RestoreSource, target: str) -> None:
    """Copy the workspace after `source.turn` into the empty thread `target`, in SQL.

    Rows go from table to table (or from the snapshot's JSON) without passing through
    Python, so the cost does not grow with the document or the number of items.
    Snapshots older than the current format take the Python path for their defaults.
    """
    snap = source.snapshot
    if snap is not None and snap.format < SNAPSHOT_FORMAT:
        state = await snapshot_state(session, snap, artifacts_up_to=source.turn)
        await session.flush()
        conv = await session.get(Conversation, target)
        assert conv is not None
        await replace_workspace_in(session, conv, state, fresh=True)
        await _copy_artifacts(session, snap.thread_id, source.turn, target)
        return
    if source.live is not None:
        src = source.live.thread_id
        await session.execute(
            insert(Document).from_select(
                ["thread_id", "title", "content", "body_hash"],
                select(literal(target), Document.title, Document.content, Document.body_hash).where(
                    Document.thread_id == src
                ),
            )
        )
        await session.execute(
            insert(Preference).from_select(
                ["uid", "thread_id", "text", "locked", "position"],
                select(
                    Preference.uid,
                    literal(target),
                    Preference.text,
                    Preference.locked,
                    Preference.position,
                ).where(Preference.thread_id == src),
            )
        )
        await session.execute(
            insert(Todo).from_select(
                ["uid", "thread_id", "text", "done", "depth", "position"],
                select(
                    Todo.uid, literal(target), Todo.text, Todo.done, Todo.depth, Todo.position
                ).where(Todo.thread_id == src),
            )
        )
        # The live rows of the thread at its tip: every artifact it has.
        await _copy_artifacts(session, src, source.live.turn_index, target)
        return
    assert snap is not None
    if snap.document_title is not None or snap.document_hash is not None:
        # The restored document points at the snapshot's stored body: nothing to copy.
        session.add(
            Document(
                thread_id=target,
                title=snap.document_title or "",
                content="",
                body_hash=snap.document_hash,
            )
        )
        await session.flush()
    dialect = session.bind.dialect.name if session.bind else "sqlite"
    statements = _PG_ITEMS if dialect == "postgresql" else _SQLITE_ITEMS
    for sql in statements.values():
        await session.execute(text(sql), {"t": target, "sid": snap.id})
    await _copy_artifacts(session, snap.thread_id, source.turn, target)


async def _copy_artifacts(session: AsyncSession, src: str, up_to: int, target: str) -> None:
    await session.execute(
        insert(Artifact).from_select(
            ["thread_id", "turn_index", "kind", "title", "content", "created_at"],
            select(
                literal(target),
                Artifact.turn_index,
                Artifact.kind,
                Artifact.title,
                Artifact.content,
                Artifact.created_at,
            )
            .where(Artifact.thread_id == src, Artifact.turn_index <= up_to)
            .order_by(Artifact.id),
        )
    )


async def _store_body(session: AsyncSession, content: str) -> str:
    digest = hashlib.sha256(content.encode()).hexdigest()
    dialect = session.bind.dialect.name if session.bind else "sqlite"
    insert = pg_insert if dialect == "postgresql" else sqlite_insert
    await session.execute(
        insert(DocumentBody)
        .values(hash=digest, content=content)
        .on_conflict_do_nothing(index_elements=["hash"])
    )
    return digest


async def capture_snapshot(
    session: AsyncSession, conv: Conversation, *, turn_index: int, user_message: str
) -> WorkspaceSnapshot:
    """Write snapshot `turn_index` from the live rows (the start of that turn)."""
    state = await live_state(session, conv)
    digest = None
    if state.document is not None:
        doc = await repo.get_document(session, conv.thread_id)
        # An unedited restored document already is a stored version.
        if doc is not None and doc.body_hash is not None:
            digest = doc.body_hash
        else:
            digest = await _store_body(session, state.document.content)
    snap = WorkspaceSnapshot(
        thread_id=conv.thread_id,
        turn_index=turn_index,
        format=SNAPSHOT_FORMAT,
        objective=state.objective,
        document_title=state.document.title if state.document else None,
        document_hash=digest,
        preferences=[{"uid": p.uid, "text": p.text, "locked": p.locked} for p in state.preferences],
        todos=[
            {"uid": t.uid, "text": t.text, "done": t.done, "depth": t.depth} for t in state.todos
        ],
        user_message=user_message[:MAX_USER_MESSAGE_PREVIEW],
        state="running",
    )
    session.add(snap)
    await session.flush()
    return snap


# ---- live edits (session level; used by the REST face and the agent's tools) ----


def _move(items: Sequence[Any], item: Any, position: int) -> None:
    ordered = [i for i in items if i is not item]
    position = max(0, min(position, len(ordered)))
    ordered.insert(position, item)
    for i, it in enumerate(ordered):
        it.position = i


def _renumber(items: Sequence[Any]) -> None:
    for i, it in enumerate(items):
        it.position = i


async def set_objective_in(session: AsyncSession, conv: Conversation, text: str | None) -> None:
    conv.objective = text.strip() if text and text.strip() else None
    await touch(session, conv)


async def write_document_in(
    session: AsyncSession,
    conv: Conversation,
    *,
    content: str | None = None,
    append: str | None = None,
    title: str | None = None,
) -> None:
    doc = await conversations_service.ensure_document(session, conv.thread_id)
    if title is not None:
        doc.title = title
    if content is not None or append is not None:
        body = content if content is not None else await document_body(session, doc)
        if append is not None:
            body = f"{body.rstrip()}\n\n{append}" if body.strip() else append
        doc.content = body
        doc.body_hash = None
    await touch(session, conv)


async def add_preference_in(
    session: AsyncSession, conv: Conversation, *, text: str, locked: bool = False
) -> Preference:
    prefs = await repo.list_preferences(session, conv.thread_id)
    pref = Preference(
        uid=new_uid(), thread_id=conv.thread_id, text=text, locked=locked, position=len(prefs)
    )
    session.add(pref)
    await touch(session, conv)
    await session.flush()
    return pref


async def _owned_item(
    session: AsyncSession, model: type[Preference] | type[Todo], conv: Conversation, item_id: int
) -> Preference | Todo:
    item = cast(Preference | Todo | None, await session.get(model, item_id))
    if item is None or item.thread_id != conv.thread_id:
        raise NotFound(f"{model.__tablename__[:-1]} {item_id} not found")
    return item


async def _list_items(
    session: AsyncSession, model: type[Preference] | type[Todo], thread_id: str
) -> Sequence[Preference | Todo]:
    if model is Preference:
        return await repo.list_preferences(session, thread_id)
    return await repo.list_todos(session, thread_id)


async def _update_item_in(
    session: AsyncSession,
    conv: Conversation,
    model: type[Preference] | type[Todo],
    item_id: int,
    patch: PreferencePatch | TodoPatch,
) -> Preference | Todo:
    """Apply the fields a PATCH sets (null leaves a field as it is); position reorders."""
    item = await _owned_item(session, model, conv, item_id)
    for name in sorted(patch.model_fields_set - {"position"}):
        value = getattr(patch, name)
        if value is not None:
            setattr(item, name, value)
    if patch.position is not None:
        _move(await _list_items(session, model, conv.thread_id), item, patch.position)
    await touch(session, conv)
    await session.flush()
    return item


async def _delete_item_in(
    session: AsyncSession, conv: Conversation, model: type[Preference] | type[Todo], item_id: int
) -> None:
    item = await _owned_item(session, model, conv, item_id)
    await session.delete(item)
    await session.flush()
    _renumber(await _list_items(session, model, conv.thread_id))
    await touch(session, conv)


async def update_preference_in(
    session: AsyncSession, conv: Conversation, pref_id: int, patch: PreferencePatch
) -> Preference:
    pref = await _update_item_in(session, conv, Preference, pref_id, patch)
    assert isinstance(pref, Preference)
    return pref


async def delete_preference_in(session: AsyncSession, conv: Conversation, pref_id: int) -> None:
    await _delete_item_in(session, conv, Preference, pref_id)


async def add_todo_in(
    session: AsyncSession, conv: Conversation, *, text: str, done: bool = False, depth: int = 0
) -> Todo:
    todos = await repo.list_todos(session, conv.thread_id)
    todo = Todo(
        uid=new_uid(),
        thread_id=conv.thread_id,
        text=text,
        done=done,
        depth=depth,
        position=len(todos),
    )
    session.add(todo)
    await touch(session, conv)
    await session.flush()
    return todo


async def update_todo_in(
    session: AsyncSession, conv: Conversation, todo_id: int, patch: TodoPatch
) -> Todo:
    todo = await _update_item_in(session, conv, Todo, todo_id, patch)
    assert isinstance(todo, Todo)
    return todo


async def delete_todo_in(session: AsyncSession, conv: Conversation, todo_id: int) -> None:
    await _delete_item_in(session, conv, Todo, todo_id)


async def create_artifact_in(
    session: AsyncSession, conv: Conversation, *, title: str, content: str, kind: str = "text"
) -> Artifact:
    art = Artifact(
        thread_id=conv.thread_id,
        turn_index=conv.turn_index,
        kind=kind,
        title=title,
        content=content,
    )
    session.add(art)
    await touch(session, conv)
    await session.flush()
    return art


async def replace_workspace_in(
    session: AsyncSession, conv: Conversation, state: WorkspaceState, *, fresh: bool = False
) -> None:
    """Overwrite the live rows of `conv` with `state` (items keep their uids).

    Items are written with one multi-row INSERT each; `fresh` says the thread has no
    rows yet (a new branch or draft), which saves the deletes and the document read.
    """
    tid = conv.thread_id
    if not fresh:
        await session.execute(delete(Preference).where(Preference.thread_id == tid))
        await session.execute(delete(Todo).where(Todo.thread_id == tid))
    conv.objective = state.objective
    doc = None if fresh else await repo.get_document(session, tid)
    if state.document is None:
        if doc is not None:
            await session.delete(doc)
    elif doc is None:
        session.add(
            Document(thread_id=tid, title=state.document.title, content=state.document.content)
        )
    else:
        doc.title = state.document.title
        doc.content = state.document.content
        doc.body_hash = None
    await session.flush()
    if state.preferences:
        await session.execute(
            insert(Preference),
            [
                {"uid": p.uid, "thread_id": tid, "text": p.text, "locked": p.locked, "position": i}
                for i, p in enumerate(state.preferences)
            ],
        )
    if state.todos:
        await session.execute(
            insert(Todo),
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


# ---- the REST face: ownership first, one transaction each ----


async def get_workspace(
    db: Database, *, user_id: int, thread_id: str, as_of_turn: int | None = None
) -> WorkspaceOut:
    async with db.read() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        if as_of_turn is None:
            return (await live_state(s, conv)).to_out()
        return (await resolve_restore_state(s, conv, as_of_turn)).to_out()


async def set_objective(
    db: Database, *, user_id: int, thread_id: str, text: str | None
) -> WorkspaceOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await set_objective_in(s, conv, text)
        await s.flush()
        return (await live_state(s, conv)).to_out()


async def put_document(
    db: Database, *, user_id: int, thread_id: str, content: str, title: str | None
) -> WorkspaceOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await write_document_in(s, conv, content=content, title=title)
        await s.flush()
        return (await live_state(s, conv)).to_out()


def _pref_out(p: Preference) -> PreferenceOut:
    return PreferenceOut(id=p.id, uid=p.uid, text=p.text, locked=p.locked, position=p.position)


def _todo_out(t: Todo) -> TodoOut:
    return TodoOut(id=t.id, uid=t.uid, text=t.text, done=t.done, depth=t.depth, position=t.position)


async def add_preference(
    db: Database, *, user_id: int, thread_id: str, text: str, locked: bool
) -> PreferenceOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        return _pref_out(await add_preference_in(s, conv, text=text, locked=locked))


async def update_preference(
    db: Database, *, user_id: int, thread_id: str, pref_id: int, patch: PreferencePatch
) -> PreferenceOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        return _pref_out(await update_preference_in(s, conv, pref_id, patch))


async def delete_preference(db: Database, *, user_id: int, thread_id: str, pref_id: int) -> None:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await delete_preference_in(s, conv, pref_id)


async def add_todo(
    db: Database, *, user_id: int, thread_id: str, text: str, done: bool, depth: int
) -> TodoOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        return _todo_out(await add_todo_in(s, conv, text=text, done=done, depth=depth))


async def update_todo(
    db: Database, *, user_id: int, thread_id: str, todo_id: int, patch: TodoPatch
) -> TodoOut:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        return _todo_out(await update_todo_in(s, conv, todo_id, patch))


async def delete_todo(db: Database, *, user_id: int, thread_id: str, todo_id: int) -> None:
    async with db.transaction() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        await delete_todo_in(s, conv, todo_id)


async def get_artifact(
    db: Database, *, user_id: int, thread_id: str, artifact_id: int
) -> ArtifactOut:
    async with db.read() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id)
        art = await s.get(Artifact, artifact_id)
        # An as-of view may list an ancestor's artifact, so any thread of the lineage counts.
        lineage_ids = {e.thread_id for e in await conv_repo.lineage(s, conv.thread_id)}
        if art is None or art.thread_id not in lineage_ids:
            raise NotFound(f"artifact {artifact_id} not found")
        return ArtifactOut(
            id=art.id,
            turn_index=art.turn_index,
            kind=art.kind,
            title=art.title,
            content=art.content,
        )
