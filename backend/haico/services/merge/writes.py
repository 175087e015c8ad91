"""The writes of a merge's apply (`service._apply` holds the transaction and the
family's lock): the node's record, the live workspace's change, and the head's move
with the node's actions."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import Write, dialect_of
from haico.db.engine import bodies_of, bodies_written
from haico.db.models import (
    Artifact,
    ChatHead,
    Conversation,
    Document,
    Preference,
    Todo,
    WorkspaceEdit,
)
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import items as items_repo
from haico.db.repositories import merge as repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import workspace as ws_repo
from haico.domain import MERGED_FROM_META, NodeId, NodeKind, now
from haico.events import actions
from haico.events import log as action_log
from haico.schemas.merge import MergeMode
from haico.services.merge import result as merging
from haico.services.merge.plan import Item
from haico.services.merge.sides import Sides, recorded_state
from haico.services.workspace.snapshots import capture_snapshot
from haico.services.workspace.state import PreferenceState, TodoState


async def node_writes(
    s: AsyncSession,
    conv: Conversation,
    sides: Sides,
    source: NodeId,
    kind: NodeKind,
    description: str,
) -> tuple[NodeId, list[Write]]:
    """The writes of snapshot k (the workspace before the merge), the node's record
    (`kind`: a merge, a pick, or the revert of one) and the clock at k, independent
    of each other and of the workspace's changes (for `execute_all`, or the head's
    statement). The loaded `conv` is at k already."""
    k = conv.turn_index + 1
    writes, _ = await capture_snapshot(
        s,
        conv,
        turn_index=k,
        user_message=description,
        known=(sides.ours_rows.document, sides.ours_state),
        author=action_log.grantee(conv.user_id),
    )
    postgres = dialect_of(s).is_postgres
    digest = None
    if sides.theirs.content is not None:
        # The source's document as merged, stored once (content-addressed).
        digest, body = ws_repo.body_unless_stored(
            sides.theirs.content, bodies_of(s), postgres=postgres, prefix="b2"
        )
        if body is not None:
            writes.insert(0, body)
            bodies_written(s, [digest])
    # The snapshot's INSERT is the node's whole record: kind, source, merged state.
    writes[-1] = repo.merge_node(
        writes[-1],
        kind=kind,
        merged_from=str(source),
        merged_state=recorded_state(sides.theirs, digest),
    )
    writes.append(threads_repo.clock_advance(conv, k))
    # Two bodies (ours when not stored yet, and theirs) may be the same text, which
    # ON CONFLICT DO NOTHING in one statement allows.
    return NodeId(conv.thread_id, k), writes


async def write_workspace(
    s: AsyncSession, conv: Conversation, k: int, sides: Sides, result: merging.Result
) -> tuple[list[str], list[Write]]:
    """Give the live rows the merged workspace, each change recorded in the research
    ledger at node k with origin `merge`; returns the surfaces changed, and the writes
    left for the caller's last statement (the document's row, and on PostgreSQL the
    ledger's rows)."""
    ours, new = sides.ours, result.side
    tid = conv.thread_id
    surfaces: list[str] = []
    later: list[Write] = []
    edits: list[tuple[str, str | None, str]] = []
    if new.objective != ours.objective:
        conv.objective = new.objective
        surfaces.append("objective")
        edits.append(("objective", None, "change"))
    if (new.title, new.content) != (ours.title, ours.content):
        if sides.ours_rows.document is None:
            s.add(Document(thread_id=tid, title=new.title or "", content=new.content or ""))
        else:  # one UPDATE, no read: the live rows were read with the sides
            later.append(
                ws_repo.document_write(
                    tid,
                    title=new.title or "",
                    content=new.content or "",
                    keep_body=new.content == ours.content,
                )
            )
        surfaces.append("document")
        edits.append(("document", None, "change"))
    if new.preferences != ours.preferences or new.todos != ours.todos:
        edits += await _write_items(s, tid, k, sides, result, later)
        surfaces += [
            name
            for name, a, b in (
                ("preferences", new.preferences, ours.preferences),
                ("todos", new.todos, ours.todos),
            )
            if a != b
        ]
    added = [a for a in new.artifacts if a not in ours.artifacts]
    if added:
        bodies = await repo.artifact_bodies(s, [a.row_id for a in added if a.row_id is not None])
        for a in added:
            body = bodies.get(a.row_id) if a.row_id is not None else None
            s.add(
                Artifact(
                    thread_id=tid,
                    turn_index=k,
                    uid=a.key,
                    kind=a.kind,
                    title=a.title,
                    content=body.content if body is not None else "",
                )
            )
        surfaces.append("artifacts")
        held = {a.key for a in ours.artifacts}
        edits += [("artifact", a.key, "change" if a.key in held else "add") for a in added]
    at = now()
    # (None for the owner's merge; a grantee's names the grantee)
    author = action_log.grantee(conv.user_id)
    if dialect_of(s).is_postgres and edits:
        # One INSERT of arrays, in the caller's last statement.
        later.append(repo.edits_write(tid, k, edits, origin="merge", author=author, at=at))
        edits = []
    for surface, uid, kind in edits:
        s.add(
            WorkspaceEdit(
                thread_id=tid,
                turn_index=k,
                surface=surface,
                uid=uid,
                kind=kind,
                origin="merge",
                author=author,
                at=at,
            )
        )
    await s.flush()
    return surfaces, later


async def _write_items(
    s: AsyncSession, tid: str, k: int, sides: Sides, result: merging.Result, later: list[Write]
) -> list[tuple[str, str | None, str]]:
    """Change the thread's preferences and todos into the merged lists: only the rows
    that differ (items keep their uid and their row); a removal is kept as a decision
    rejected at turn k. Returns the ledger's (surface, uid, kind) of each change. On
    PostgreSQL the rows are written by `later`'s writes of arrays, in the caller's last
    statement."""
    postgres = dialect_of(s).is_postgres
    lists: tuple[
        tuple[
            type[Preference] | type[Todo], Sequence[PreferenceState | TodoState], tuple[Item, ...]
        ],
        ...,
    ] = (
        (Preference, sides.ours_state.preferences, result.side.preferences),
        (Todo, sides.ours_state.todos, result.side.todos),
    )
    edits: list[tuple[str, str | None, str]] = []
    for model, old, new in lists:
        surface = "preference" if model is Preference else "todo"
        before = {o.uid: (o, n) for n, o in enumerate(old)}
        kept = {i.uid for i in new}
        updates: list[dict[str, Any]] = []
        inserts: list[dict[str, Any]] = []
        for position, item in enumerate(new):
            row = {**item.values, "position": position}
            found = before.get(item.uid)
            if found is None:
                inserts.append({"uid": item.uid, "thread_id": tid, **row})
                edits.append((surface, item.uid, "add"))
                continue
            o, was = found
            if {f: getattr(o, f) for f in item.values} | {"position": was} != row:
                updates.append({"id": o.id, **row})
                edits.append((surface, item.uid, "change"))
        edits += [(surface, o.uid, "remove") for o in old if o.uid not in kept]
        dropped = [o.id for o in old if o.uid not in kept and o.id]
        if postgres:
            later += repo.item_writes(model, tid, deletes=dropped, updates=updates, inserts=inserts)
            continue
        await repo.delete_items(s, model, dropped)
        await repo.update_items(s, model, updates)
        insert = items_repo.insert_preferences if model is Preference else items_repo.insert_todos
        await insert(s, inserts)
    rejected = [
        (item.uid, result.removed_surface[item.uid], str(item.values.get("text", "")))
        for item in result.removed
    ]
    if postgres:
        if rejected:
            later.append(repo.rejected_write(tid, k, rejected))
        return edits
    await ws_repo.insert_rejected(
        s,
        [
            {"thread_id": tid, "uid": u, "surface": sf, "text": t, "rejected_after_turn": k}
            for u, sf, t in rejected
        ],
    )
    return edits


def merge_meta(source: NodeId, mode: MergeMode) -> dict[str, str]:
    """A merge node's message `_meta`: its source and its mode."""
    return {MERGED_FROM_META: str(source), "haico/mergeMode": mode}


async def move_head(
    s: AsyncSession,
    head: ChatHead,
    conv: Conversation,
    node: NodeId,
    parent: str | None,
    meta: dict[str, str],
    description: str,
    surfaces: list[str],
    writes: Sequence[Write] = (),
) -> None:
    """The head onto the node, and the node's actions: a completed turn whose message
    is a system notification with `meta` (naming its source); `writes` (independent
    of the head's) go in the same statement."""
    author = action_log.grantee(conv.user_id)
    started = actions.turn_started(
        str(node),
        parent_turn_id=parent,
        text=description,
        started_at=now().isoformat(),
        author=author,
    )
    started["message"]["origin"] = {"kind": "systemNotification"}
    started["message"].setdefault("_meta", {}).update(meta)
    changed = []
    if surfaces:
        change = actions.workspace_changed(conv.thread_id, surfaces[0], "set")
        change["surfaces"] = surfaces
        changed.append(change)
    complete = {"type": "chat/turnComplete", "turnId": str(node), "duration": 0}
    advance = heads_repo.head_advance(
        root_thread_id=conv.root_thread_id, working_thread_id=conv.thread_id, head_turn_id=str(node)
    )
    await action_log.append_chat(
        s, conv.root_thread_id, started, *changed, complete, after=[advance, *writes]
    )
