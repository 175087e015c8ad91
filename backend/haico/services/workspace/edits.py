"""Live workspace edits, one path for every editor: the REST face and the agent's tools.

Each `*_in` function edits one thread's live rows inside the caller's transaction and
records the edit (`live_edit.changed`); the REST functions below check ownership and
open that transaction. Preferences and todos are edited in `services.workspace.items` (an added
one, the agent's most frequent edit, needs no transaction on PostgreSQL). Reads as of
a turn go through `services.workspace.snapshots`.
"""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database, limits_of
from haico.db.models import Artifact, Conversation, Preference, Todo
from haico.db.repositories import workspace as repo
from haico.domain import TITLE_CHARS
from haico.errors import InvalidInput, NotFound
from haico.events import log as action_log
from haico.schemas.workspace import (
    ArtifactOut,
    PreferenceOut,
    PreferencePatch,
    TodoOut,
    TodoPatch,
    WorkspaceOut,
)
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families import titles
from haico.services.families.conversations import add_root_if_missing, get_for
from haico.services.families.model import Lineage
from haico.services.search import service as search
from haico.services.workspace.items import (
    add_item,
    delete_preference_in,
    delete_todo_in,
    update_preference_in,
    update_todo_in,
)
from haico.services.workspace.live_edit import changed
from haico.services.workspace.snapshots import resolve_restore_state
from haico.services.workspace.state import document_body, live_state, new_uid


async def set_objective_in(
    session: AsyncSession, conv: Conversation, text: str | None, *, announce_title: bool = True
) -> None:
    """Set the objective; a thread still titled "New conversation" is named after it,
    announced as a rename unless `announce_title` is false (a turn's tool: the turn's
    end refreshes every client's list anyway)."""
    if text is not None and len(text) > limits_of(session).message_chars:
        raise InvalidInput(f"objective: at most {limits_of(session).message_chars} characters")
    conv.objective = text.strip() if text and text.strip() else None
    await changed(session, conv, "objective", "set", {"text": conv.objective})
    if titles.title_from_objective(conv) and announce_title:
        await action_log.append_catalogue(
            session,
            conv.root_thread_id,
            conv.thread_id,
            "renamed",
            title=conv.title,
            name=conv.name,
        )


async def write_document_in(
    session: AsyncSession,
    conv: Conversation,
    *,
    content: str | None = None,
    append: str | None = None,
    title: str | None = None,
) -> None:
    if title is not None:
        _check_title(title)
    doc = await repo.ensure_document(session, conv.thread_id)
    if title is not None:
        doc.title = title
    if content is not None or append is not None:
        body = content if content is not None else await document_body(session, doc)
        if append is not None:
            body = f"{body.rstrip()}\n\n{append}" if body.strip() else append
        cap = limits_of(session).document_chars
        if len(body) > cap:
            raise InvalidInput(f"document: at most {cap} characters (this one has {len(body)})")
        doc.content = body
        doc.body_hash = None
    item = {"title": doc.title, "content": await document_body(session, doc)}
    await changed(session, conv, "document", "set", item)


async def create_artifact_in(
    session: AsyncSession, conv: Conversation, *, title: str, content: str, kind: str = "text"
) -> Artifact:
    _check_title(title)
    art = Artifact(
        thread_id=conv.thread_id,
        turn_index=conv.turn_index,
        uid=new_uid(),
        kind=kind,
        title=title,
        content=content,
    )
    session.add(art)
    await session.flush()
    summary = {"id": art.id, "turn_index": art.turn_index, "kind": art.kind, "title": art.title}
    await changed(session, conv, "artifacts", "added", summary)
    return art


def _check_title(title: str) -> None:
    """The REST face's schemas refuse a longer title; the agent's tools reach here."""
    if len(title) > TITLE_CHARS:
        raise InvalidInput(f"title: at most {TITLE_CHARS} characters")


# ---- the REST face: ownership first, one transaction each ----


async def get_workspace(
    db: Database, *, principal: Principal, thread_id: str, as_of_turn: int | None = None
) -> WorkspaceOut:
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        if as_of_turn is None:
            return (await live_state(s, conv)).to_out()
        return (await resolve_restore_state(s, conv, as_of_turn)).to_out()


async def set_objective(
    db: Database, *, principal: Principal, thread_id: str, text: str | None, create: bool = False
) -> WorkspaceOut:
    """`create`: a missing thread is created with the edit (`add_root_if_missing`)."""
    async with db.transaction() as s:
        if create:
            await add_root_if_missing(s, principal, thread_id=thread_id)
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        await set_objective_in(s, conv, text)
        await s.flush()
        return (await live_state(s, conv)).to_out()


async def put_document(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    content: str,
    title: str | None,
    create: bool = False,
) -> WorkspaceOut:
    async with db.transaction() as s:
        if create:
            await add_root_if_missing(s, principal, thread_id=thread_id)
        conv, branch = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        await write_document_in(s, conv, content=content, title=title)
        await search.index_live_document_in(s, conv, branch)
        await s.flush()
        return (await live_state(s, conv)).to_out()


def _pref_out(p: Preference) -> PreferenceOut:
    return PreferenceOut(id=p.id, uid=p.uid, text=p.text, locked=p.locked, position=p.position)


def _todo_out(t: Todo) -> TodoOut:
    return TodoOut(id=t.id, uid=t.uid, text=t.text, done=t.done, depth=t.depth, position=t.position)


async def add_preference(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    text: str,
    locked: bool,
    create: bool = False,
) -> PreferenceOut:
    fields = {"text": text, "locked": locked}
    _, pref = await add_item(db, thread_id, Preference, fields, principal=principal, create=create)
    assert isinstance(pref, Preference)
    return _pref_out(pref)


async def update_preference(
    db: Database, *, principal: Principal, thread_id: str, pref_id: int, patch: PreferencePatch
) -> PreferenceOut:
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        return _pref_out(await update_preference_in(s, conv, pref_id, patch))


async def delete_preference(
    db: Database, *, principal: Principal, thread_id: str, pref_id: int
) -> None:
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        await delete_preference_in(s, conv, pref_id)


async def add_todo(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    text: str,
    done: bool,
    depth: int,
    create: bool = False,
) -> TodoOut:
    fields = {"text": text, "done": done, "depth": depth}
    _, todo = await add_item(db, thread_id, Todo, fields, principal=principal, create=create)
    assert isinstance(todo, Todo)
    return _todo_out(todo)


async def update_todo(
    db: Database, *, principal: Principal, thread_id: str, todo_id: int, patch: TodoPatch
) -> TodoOut:
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        return _todo_out(await update_todo_in(s, conv, todo_id, patch))


async def delete_todo(db: Database, *, principal: Principal, thread_id: str, todo_id: int) -> None:
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        await delete_todo_in(s, conv, todo_id)


async def get_artifact(
    db: Database, *, principal: Principal, thread_id: str, artifact_id: int
) -> ArtifactOut:
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        art = await repo.get_artifact(s, artifact_id)
        # An as-of view may list an ancestor's artifact, so any thread of the lineage counts.
        if art is None or art.thread_id not in (await Lineage.load(s, conv.thread_id)).thread_ids:
            raise NotFound(f"artifact {artifact_id} not found")
        return ArtifactOut(
            id=art.id,
            uid=art.uid,
            turn_index=art.turn_index,
            kind=art.kind,
            title=art.title,
            content=art.content,
        )
