"""Bring a path back: pick one node's change, or merge a path, into a thread as one node.

A preview plans against the target thread's live workspace and writes nothing. An
apply is one transaction under the family lock, like a turn's opening and close
together:

1. lock the thread and the family's head; refuse during an active turn, on a stale
   expected head, and (unless `force`) when making the thread the working one would
   discard an edited draft — that implicit checkout happens in this transaction;
2. plan (`plan.py`) and settle the conflicts with the resolutions (`MERGE_PLAN`);
3. write the node's record: snapshot k of the workspace before the merge (the
   snapshot rule, as a turn), marked a complete merge node with its source and the
   source's workspace as merged (a later merge's base), and the clock at k
   (`MERGE_NODE`);
4. change the live workspace: objective, document (and its search entry), the items
   that differ (removals kept as rejected decisions stamped k), artifacts copied
   stamped k, each change recorded in the research ledger with origin `merge`
   (`MERGE_APPLY`); on a linear host the nodes off the new path are pruned,
   as a send prunes them;
5. move the head onto the node and log `chat/turnStarted` (a system notification
   with `_meta["haico/mergedFrom"]`), the workspace changes and `chat/turnComplete`
   (`MERGE_HEAD`).

A failure, or a kill, at any step leaves nothing. The one write before that
transaction is a send's: a target that is the family's working draft is first made
a branch (`branching.promote_draft`), exactly as a message sent there would.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from app.agent.runtime import AgentRuntime
from app.db.dialect import dialect_of, execute_all
from app.db.engine import Database, fault, limits_of
from app.db.faults import Step
from app.db.models import (
    Artifact,
    ChatHead,
    Conversation,
    Document,
    Preference,
    Todo,
    WorkspaceEdit,
)
from app.db.repositories import heads as heads_repo
from app.db.repositories import items as items_repo
from app.db.repositories import merge as repo
from app.db.repositories import threads as threads_repo
from app.db.repositories import workspace as ws_repo
from app.domain import MERGED_FROM_META, BranchStatus, NodeId, NodeKind, now
from app.errors import (
    Conflict,
    InvalidInput,
    MergeConflict,
    NotFound,
    NothingToMerge,
    TurnInProgress,
)
from app.events import actions
from app.events import log as action_log
from app.schemas_merge import MergeChange, MergeIn, MergeMode, MergeOut, MergePlan
from app.services import heads, pruning, search
from app.services.access import Role
from app.services.branching import promote_draft
from app.services.compare import parse_node
from app.services.conversations import get_owned
from app.services.merge import plan as planner
from app.services.merge import result as merging
from app.services.merge.plan import Item
from app.services.merge.sides import Sides, load_sides, recorded_state
from app.services.snapshots import capture_snapshot
from app.services.workspace_state import PreferenceState, TodoState

UNSET: Any = object()


def plan_out(mode: MergeMode, source: NodeId, sides: Sides, plan: planner.Plan) -> MergePlan:
    return MergePlan(
        mode=mode,
        source=str(source),
        base=str(sides.base_node) if sides.base_node else None,
        target=str(sides.target_node) if sides.target_node else None,
        changes=[
            MergeChange(
                id=c.id,
                surface=c.surface,
                uid=c.uid,
                kind=c.kind,
                base=c.base,
                ours=c.ours,
                theirs=c.theirs,
                conflict=c.conflict,
                fields=list(c.fields),
                conflict_fields=list(c.clashes),
            )
            for c in plan.changes
        ],
    )


async def preview(db: Database, *, user_id: int, thread_id: str, body: MergeIn) -> MergePlan:
    """The plan against the workspace a merge would target; nothing is written."""
    source = parse_node(body.source, name="source")
    async with db.read() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id, need=Role.EDITOR)
        sides = await load_sides(s, user_id=user_id, target=conv, source=source, mode=body.mode)
    return plan_out(body.mode, source, sides, planner.plan(sides.base, sides.ours, sides.theirs))


class _NeedsPromotion(Exception):
    """The target is the family's working draft: it must become a branch first."""


async def merge(
    db: Database,
    runtime: AgentRuntime,
    *,
    user_id: int,
    thread_id: str,
    body: MergeIn,
    expected_head_turn_id: Any = UNSET,
    retains: bool = True,
) -> MergeOut:
    """Apply a merge or a pick (see the module doc). On a linear host (`retains`
    false) the nodes off the new path are pruned with it, as a send prunes them."""
    source = parse_node(body.source, name="source")
    for attempt in range(2):
        try:
            out, pruned = await _apply(
                db,
                user_id=user_id,
                thread_id=thread_id,
                source=source,
                body=body,
                expected=expected_head_turn_id,
                retains=retains,
            )
            if pruned is not None and pruned.turn_ids:
                await pruning.after_prune(runtime, pruned)
            return out
        except _NeedsPromotion:
            if attempt:
                raise Conflict("the conversation's history moved while merging; retry") from None
            await promote_draft(db, runtime, thread_id)
    raise AssertionError("unreachable")


async def _apply(
    db: Database,
    *,
    user_id: int,
    thread_id: str,
    source: NodeId,
    body: MergeIn,
    expected: Any,
    retains: bool,
) -> tuple[MergeOut, pruning.PruneResult | None]:
    async with db.transaction() as s:
        conv, branch, head = await heads.lock_owned_with_head(
            s, thread_id=thread_id, user_id=user_id
        )
        root_id = conv.root_thread_id
        if await heads_repo.get_active_turn(s, root_id, fresh=True) is not None:
            raise TurnInProgress("a turn is running in this conversation; wait or cancel it")
        if expected is not UNSET and expected != head.head_turn_id:
            raise Conflict(
                f"the head moved: it is {head.head_turn_id or 'the baseline'}, "
                f"not {expected or 'the baseline'}"
            )
        draft = branch is not None and branch.status == BranchStatus.DRAFT
        if head.working_thread_id != conv.thread_id:
            if draft:
                raise NotFound("this restored view was discarded by a later checkout")
            await heads.make_working_in(s, head, conv, branch, force=body.force, user_id=user_id)
            if head.working_thread_id != conv.thread_id:
                raise Conflict("this thread's latest turns were pruned; send a message there first")
        elif draft:
            raise _NeedsPromotion
        sides = await load_sides(s, user_id=user_id, target=conv, source=source, mode=body.mode)
        plan = planner.plan(sides.base, sides.ours, sides.theirs)
        out = plan_out(body.mode, source, sides, plan)
        try:
            result = merging.merge_result(plan, sides.ours, sides.theirs, body.resolutions or {})
        except merging.UnknownChange as exc:
            raise InvalidInput(f"resolutions: no change {', '.join(exc.args[0])}") from exc
        except merging.Unresolved as exc:
            raise MergeConflict(
                f"{len(exc.args[0])} conflict(s) need a resolution (ours or theirs)",
                data={"plan": out.model_dump(mode="json")},
            ) from exc
        if not result.brought:
            raise NothingToMerge(f"{thread_id} already has everything {source} would bring")
        _check_limits(s, result.side)
        await fault(s, Step.MERGE_PLAN)
        label = body.label or _label(source, sides.source_conv, conv)
        description = f"Brought in from {label}: {merging.summary(result.brought)}"
        node = await _write_node(s, conv, sides, source, body.mode, description)
        await fault(s, Step.MERGE_NODE)
        surfaces = await _write_workspace(s, conv, node.turn, sides, result)
        if "document" in surfaces:
            # No turn runs (checked above, under the family's lock) and node k is new.
            await search.index_new_node_document_in(s, conv, branch, result.side.content)
        await fault(s, Step.MERGE_APPLY)
        # After the copies: a pruned source's artifacts are read above.
        pruned = None if retains else await pruning.linear_prune_in(s, head, active=node)
        parent = head.head_turn_id
        await _move_head(s, head, conv, node, parent, source, body.mode, description, surfaces)
        await fault(s, Step.MERGE_HEAD)
        merged = MergeOut(
            node_id=str(node),
            parent_node_id=parent,
            merged_from=str(source),
            mode=body.mode,
            description=description,
            plan=out,
        )
        return merged, pruned


def _check_limits(s: AsyncSession, side: planner.Side) -> None:
    limits = limits_of(s)
    if len(side.preferences) > limits.items or len(side.todos) > limits.items:
        raise InvalidInput(f"the merge would leave more than {limits.items} items in a list")
    if side.content is not None and len(side.content) > limits.document_chars:
        raise InvalidInput(
            f"document: the merge would leave more than {limits.document_chars} characters"
        )


def _label(source: NodeId, source_conv: Conversation, target: Conversation) -> str:
    """How the description names the source when the client gave no label: its turn,
    with its branch's name (or title) when it is not on the target's own thread."""
    if source.thread_id == target.thread_id:
        return str(source.turn)
    name = source_conv.name or source_conv.title
    return f"{source.turn} ({name})" if name else str(source.turn)


async def _write_node(
    s: AsyncSession,
    conv: Conversation,
    sides: Sides,
    source: NodeId,
    mode: MergeMode,
    description: str,
) -> NodeId:
    """Snapshot k (the workspace before the merge), the node record, the clock at k."""
    k = conv.turn_index + 1
    writes, _ = await capture_snapshot(
        s,
        conv,
        turn_index=k,
        user_message=description,
        live=sides.ours_rows,
        author=action_log.grantee(conv.user_id),
    )
    kind = NodeKind.PICK if mode == "pick" else NodeKind.MERGE
    writes.append(threads_repo.clock_advance(conv, k))
    await execute_all(s, *writes)
    digest = None
    if sides.theirs.content is not None:
        # The source's document as merged, stored once (content-addressed).
        stmt, params = ws_repo.body_write(sides.theirs.content, postgres=dialect_of(s).is_postgres)
        await s.execute(stmt, params)
        digest = params["b_hash"]
    # After the snapshot's INSERT: on PostgreSQL `execute_all` runs its writes as one
    # statement, whose parts do not see each other's rows.
    await s.execute(
        *repo.merge_node(
            conv.thread_id,
            k,
            kind=kind,
            merged_from=str(source),
            merged_state=recorded_state(sides.theirs, digest),
        )
    )
    return NodeId(conv.thread_id, k)


async def _write_workspace(
    s: AsyncSession, conv: Conversation, k: int, sides: Sides, result: merging.Result
) -> list[str]:
    """Give the live rows the merged workspace, each change recorded in the research
    ledger at node k with origin `merge`; returns the surfaces changed."""
    ours, new = sides.ours, result.side
    tid = conv.thread_id
    surfaces: list[str] = []
    edits: list[tuple[str, str | None, str]] = []
    if new.objective != ours.objective:
        conv.objective = new.objective
        surfaces.append("objective")
        edits.append(("objective", None, "change"))
    if (new.title, new.content) != (ours.title, ours.content):
        if sides.ours_rows.document is None:
            s.add(Document(thread_id=tid, title=new.title or "", content=new.content or ""))
        else:  # one UPDATE, no read: the live rows were read with the sides
            await ws_repo.set_document(
                s,
                tid,
                title=new.title or "",
                content=new.content or "",
                keep_body=new.content == ours.content,
            )
        surfaces.append("document")
        edits.append(("document", None, "change"))
    if new.preferences != ours.preferences or new.todos != ours.todos:
        edits += await _write_items(s, tid, k, sides, result)
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
    return surfaces


async def _write_items(
    s: AsyncSession, tid: str, k: int, sides: Sides, result: merging.Result
) -> list[tuple[str, str | None, str]]:
    """Change the thread's preferences and todos into the merged lists: only the rows
    that differ (items keep their uid and their row); a removal is kept as a decision
    rejected at turn k. Returns the ledger's (surface, uid, kind) of each change."""
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
        await repo.delete_items(s, model, [o.id for o in old if o.uid not in kept and o.id])
        await repo.update_items(s, model, updates)
        insert = items_repo.insert_preferences if model is Preference else items_repo.insert_todos
        await insert(s, inserts)
    await ws_repo.insert_rejected(
        s,
        [
            {
                "thread_id": tid,
                "uid": item.uid,
                "surface": result.removed_surface[item.uid],
                "text": str(item.values.get("text", "")),
                "rejected_after_turn": k,
            }
            for item in result.removed
        ],
    )
    return edits


async def _move_head(
    s: AsyncSession,
    head: ChatHead,
    conv: Conversation,
    node: NodeId,
    parent: str | None,
    source: NodeId,
    mode: MergeMode,
    description: str,
    surfaces: list[str],
) -> None:
    """The head onto the node, and the node's actions: a completed turn whose message
    is a system notification naming its source."""
    author = action_log.grantee(conv.user_id)
    started = actions.turn_started(
        str(node),
        parent_turn_id=parent,
        text=description,
        started_at=now().isoformat(),
        author=author,
    )
    started["message"]["origin"] = {"kind": "systemNotification"}
    started["message"].setdefault("_meta", {}).update(
        {MERGED_FROM_META: str(source), "haico/mergeMode": mode}
    )
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
        s, conv.root_thread_id, started, *changed, complete, after=[advance]
    )
