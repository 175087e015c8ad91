"""Snapshots: the snapshot rule, capture, restore, and copies as of a turn (the states
themselves are in `workspace_state.py`).

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
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import Write, dialect_of
from haico.db.engine import bodies_of, bodies_written
from haico.db.memo import Memo
from haico.db.models import Conversation, Document, WorkspaceSnapshot
from haico.db.repositories import items as items_repo
from haico.db.repositories import live as live_repo
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import workspace as repo
from haico.domain import NodeState
from haico.errors import InvalidInput, InvalidTurn, SnapshotMissing
from haico.schemas.workspace import DocumentOut
from haico.services.families.model import Lineage
from haico.services.workspace.state import (
    PreferenceState,
    RejectedState,
    TodoState,
    WorkspaceState,
    artifact_summary,
    live_state,
    live_with_document,
    rejected_from,
    state_of_rows,
)

# 2: items carry their uid. 3: the rejected decisions (`rejected`) are recorded.
SNAPSHOT_FORMAT = 3
MAX_USER_MESSAGE_PREVIEW = 500


def _legacy_uid(snapshot_id: int, kind: str, index: int) -> str:
    return hashlib.sha256(f"{snapshot_id}:{kind}:{index}".encode()).hexdigest()[:32]


async def snapshot_state(
    s: AsyncSession, snap: WorkspaceSnapshot, *, artifacts_up_to: int, bare: Collection[str] = ()
) -> WorkspaceState:
    """Read a snapshot row; fields that older formats lack get their defaults. `bare`:
    threads known (in this transaction) to have no artifacts: none is read for them."""
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
    arts = (
        []
        if snap.thread_id in bare
        else await repo.list_artifacts(s, snap.thread_id, max_turn=artifacts_up_to)
    )
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
    light: bool = True,
) -> RestoreSource:
    """Apply the snapshot rule: which rows hold the workspace after `turn` on `conv`.

    `known`: `conv`'s light snapshot rows read in this transaction already, by turn
    (None: read, and it has none). `light`: a snapshot row read here comes without its
    item lists (a caller that reads them asks for the whole row: one query, not two)."""
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
        return await restore_source(s, src, turn, light=light)
    owner = lineage.owner_of(turn + 1)
    if owner == conv.thread_id and known is not None and turn + 1 in known:
        snap = known[turn + 1]
    else:
        snap = await snap_repo.get_snapshot(s, owner, turn + 1, light=light)
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


async def resolve_restore_state(
    s: AsyncSession, conv: Conversation, turn: int, *, bare: Collection[str] = ()
) -> WorkspaceState:
    """The workspace as it stood after `turn` on `conv`'s lineage (see the module doc),
    with only the decisions rejected by then (`bare`: see `snapshot_state`)."""
    source = await restore_source(s, conv, turn, light=False)
    return as_of(await state_of(s, source, bare=bare), turn)


def as_of(state: WorkspaceState, turn: int) -> WorkspaceState:
    """`state` (the workspace after `turn`) with only the decisions rejected by then."""
    state.rejected = [r for r in state.rejected if r.rejected_after_turn <= turn]
    return state


async def state_of(
    s: AsyncSession, source: RestoreSource, *, bare: Collection[str] = ()
) -> WorkspaceState:
    """Read the workspace a `RestoreSource` points at (`bare`: see `snapshot_state`)."""
    if source.live is not None:
        return await live_state(s, source.live)
    assert source.snapshot is not None
    return await snapshot_state(s, source.snapshot, artifacts_up_to=source.turn, bare=bare)


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
    live: live_repo.LiveRows | None = None,
    author: str | None = None,
    known: tuple[live_repo.LiveDocument | None, WorkspaceState] | None = None,
) -> tuple[list[Write], WorkspaceState]:
    """Snapshot `turn_index` from the live rows (the start of that turn), read here
    unless the caller read them (`live`), or made them a state already (`known`, as
    `state_of_rows` answers): see `snapshot_of`. A body it stores is known as stored
    once the session's transaction commits."""
    if known is not None:
        doc, state = known
    elif live is None:
        doc, state = await live_with_document(s, conv)
    else:
        doc, state = state_of_rows(conv, live)
    writes = snapshot_of(
        conv,
        doc,
        state,
        turn_index=turn_index,
        user_message=user_message,
        postgres=dialect_of(s).is_postgres,
        author=author,
        stored=bodies_of(s),
    )
    bodies_written(s, repo.body_digests(writes))
    return writes, state


def snapshot_of(
    conv: Conversation,
    doc: live_repo.LiveDocument | None,
    state: WorkspaceState,
    *,
    turn_index: int,
    user_message: str,
    postgres: bool,
    author: str | None = None,
    stored: Memo[bool] | None = None,
) -> list[Write]:
    """The writes that store snapshot `turn_index` of the live workspace `state` (its
    document row `doc`): the document's body first when it is not stored yet, then the
    snapshot row (for `execute_all`), naming `author` (a grantee who made the node).
    The document is read once: an unedited restored document already is a stored
    version and keeps its hash without its text being stored again, and neither is a
    text whose hash `stored` holds (bodies committed before)."""
    writes: list[Write] = []
    digest = None
    if doc is not None:
        digest = doc.body_hash
        if digest is None:
            digest, write = repo.body_unless_stored(doc.content, stored, postgres=postgres)
            if write is not None:
                writes.append(write)
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
            author=author,
        )
    )
    return writes


async def replace_workspace_in(
    s: AsyncSession, conv: Conversation, state: WorkspaceState, *, fresh: bool = False
) -> None:
    """Overwrite the live rows of `conv` with `state` (items keep their uids).

    Items are written with one multi-row INSERT each; `fresh` says the thread has no
    rows yet (a new branch or draft): `seed_workspaces`, which saves the deletes and
    the document read.
    """
    if fresh:
        await seed_workspaces(s, [(conv, state)])
        return
    tid = conv.thread_id
    await items_repo.clear_items(s, tid)
    conv.objective = state.objective
    doc = await repo.get_document(s, tid)
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
    await _insert_items(s, [(conv, state)])


async def seed_workspaces(
    s: AsyncSession, seeds: Sequence[tuple[Conversation, WorkspaceState]]
) -> None:
    """Write the live rows of new threads, which have none yet, from their states: one
    INSERT per kind of row for all of them (a batch of study joins seeds many)."""
    for conv, state in seeds:
        conv.objective = state.objective
    await s.flush()
    docs = [(c.thread_id, state.document) for c, state in seeds if state.document is not None]
    await repo.insert_documents(
        s, [{"thread_id": tid, "title": d.title, "content": d.content} for tid, d in docs]
    )
    await _insert_items(s, seeds)


async def _insert_items(
    s: AsyncSession, seeds: Sequence[tuple[Conversation, WorkspaceState]]
) -> None:
    await items_repo.insert_preferences(
        s,
        [
            {
                "uid": p.uid,
                "thread_id": c.thread_id,
                "text": p.text,
                "locked": p.locked,
                "position": i,
            }
            for c, state in seeds
            for i, p in enumerate(state.preferences)
        ],
    )
    await items_repo.insert_todos(
        s,
        [
            {
                "uid": t.uid,
                "thread_id": c.thread_id,
                "text": t.text,
                "done": t.done,
                "depth": t.depth,
                "position": i,
            }
            for c, state in seeds
            for i, t in enumerate(state.todos)
        ],
    )
    await repo.insert_rejected(
        s, [{"thread_id": c.thread_id, **r.to_json()} for c, state in seeds for r in state.rejected]
    )


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
