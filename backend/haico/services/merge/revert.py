"""Undo a bring-in: a new node on the path whose workspace is the one before the merge
(or pick) node it reverts; the merge node stays in the history.

Only the head can be undone this way, and only while it is its thread's newest node
and the thread is the working one: anything else answers 409 `conflict`, naming the
steps as the studio labels them. The apply is one transaction under the family lock,
with the merge's fault steps:

1. lock the thread and the family's head; refuse during an active turn, on a stale
   expected head, when the node is no merge or pick, or is not the head;
   read the live workspace (ours) and the one after the node before the merge
   (theirs, `snapshots.resolve_restore_state`), plan ours → theirs (every change
   clean) (`MERGE_PLAN`);
2. the node's record: snapshot k of the live workspace (what the merge node's
   workspace was, edits after it included, by the snapshot rule), kind `revert`,
   `merged_from` naming the merge node (`MERGE_NODE`);
3. the live workspace becomes theirs: objective, document, items (an item the merge
   brought is dropped without becoming a rejected decision, and the decisions
   rejected since the merge node are withdrawn), each change in the research ledger
   with origin `merge` (`MERGE_APPLY`). Artifacts the merge copied stay: a path's
   artifacts are never removed;
4. the head moves onto the node; `chat/turnStarted` (a system notification with
   `_meta["haico/reverts"]`), the workspace change and `chat/turnComplete` are
   logged (`MERGE_HEAD`).

A failure, or a kill, at any step leaves nothing: the history, the head and the
workspace are as before. A later merge of the same source no longer takes the
reverted merge as its base (`sides._merge_base`), so the work can be brought in again.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import dialect_of
from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.models import Conversation
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import ledger as ledger_repo
from haico.db.repositories import live as live_repo
from haico.db.repositories import merge as repo
from haico.db.repositories import snapshots as snap_repo
from haico.domain import REVERTS_META, NodeId, NodeKind
from haico.errors import Conflict, InvalidInput, InvalidTurn, TurnInProgress
from haico.schemas.merge import RevertOut
from haico.services.access.principal import Principal
from haico.services.families.model import Family
from haico.services.history import heads, labels
from haico.services.merge import plan as planner
from haico.services.merge import result as merging
from haico.services.merge import writes
from haico.services.merge.sides import Sides, side_of
from haico.services.search import service as search
from haico.services.search.vectors import VectorFiller, fill_node
from haico.services.workspace.snapshots import resolve_restore_state
from haico.services.workspace.state import state_of_rows

UNSET: Any = object()
# A merge node's kinds: what a revert can undo.
_UNDOABLE = (NodeKind.MERGE, NodeKind.PICK)


async def revert(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    turn: int,
    expected_head_turn_id: Any = UNSET,
    vectors: VectorFiller | None = None,
) -> RevertOut:
    """Undo the merge node `thread_id:turn` (see the module doc). The restored
    document's search vector is computed after the commit, as a merge's is."""
    async with db.transaction() as s:
        out, unvectored = await _apply(
            s, principal=principal, thread_id=thread_id, turn=turn, expected=expected_head_turn_id
        )
    if unvectored is not None:
        if vectors is not None:
            vectors.kick(unvectored)
        else:
            await fill_node(db, unvectored)
    return out


async def _apply(
    s: AsyncSession, *, principal: Principal, thread_id: str, turn: int, expected: Any
) -> tuple[RevertOut, NodeId | None]:
    conv, branch, head = await heads.lock_for(s, principal, thread_id=thread_id)
    if await heads_repo.get_active_turn(s, conv.root_thread_id) is not None:
        raise TurnInProgress("a turn is running in this conversation; wait or cancel it")
    if expected is not UNSET and expected != head.head_turn_id:
        raise Conflict(
            f"the head moved: it is {head.head_turn_id or 'the baseline'}, "
            f"not {expected or 'the baseline'}"
        )
    merged = NodeId(conv.thread_id, turn)
    record = None
    if 1 <= turn <= conv.turn_index:
        record = await snap_repo.get_snapshot(s, conv.thread_id, turn, light=True)
    if record is None:
        raise InvalidTurn(f"this conversation has no step {turn}")
    at_head = (
        head.working_thread_id == conv.thread_id
        and head.head_turn_id == str(merged)
        and conv.turn_index == turn
    )
    if record.kind not in _UNDOABLE or not at_head:
        named = await _labels(s, conv, [merged, NodeId.parse(head.head_turn_id or "")])
        if record.kind not in _UNDOABLE:
            raise InvalidInput(f"step {named[0]} is not a bring-in: only a bring-in can be undone")
        now_at = f"step {named[1]}" if named[1] else "the start"
        raise Conflict(
            f"only the newest step can be undone: step {named[0]} is a bring-in, but the "
            f"path's head is {now_at}; undo the steps after it first, or restore step "
            f"{named[0]} and start from there"
        )

    rows = await live_repo.live_rows(s, conv.thread_id)
    _, ours_state = state_of_rows(conv, rows)
    before_state = await resolve_restore_state(s, conv, turn - 1)
    ours, before = await side_of(s, ours_state), await side_of(s, before_state)
    # Planned as a merge whose base is ours: everything `before` differs in comes in,
    # the items the merge rejected included (they are not rejected in `before`).
    planned = replace(ours, rejected=before.rejected)
    plan = planner.plan(planned, planned, before)
    result = merging.merge_result(plan, planned, before, {})
    # Items the merge brought leave as if never brought: no rejected decision.
    result.removed, result.removed_surface = [], {}
    await fault(s, Step.MERGE_PLAN)

    named = await _labels(s, conv, [merged])
    description = f"Undid step {named[0]}: {record.user_message}"
    sides = Sides(
        base=ours,
        ours=ours,
        theirs=before,
        base_node=None,
        target_node=merged,
        ours_state=ours_state,
        ours_rows=rows,
        source_conv=conv,
    )
    node, last = await writes.node_writes(s, conv, sides, merged, NodeKind.REVERT, description)
    await fault(s, Step.MERGE_NODE)
    surfaces, changes = await writes.write_workspace(s, conv, node.turn, sides, result)
    last += changes
    if await repo.withdraw_rejected(s, conv.thread_id, since=turn):
        for name in ("preferences", "todos"):
            if name not in surfaces:
                surfaces.append(name)
    unvectored = None
    entry = (
        search.new_node_document_write(s, conv, branch, result.side.content, before=ours.content)
        if "document" in surfaces
        else None
    )
    if entry is not None:
        last.append(entry)
        unvectored = node if dialect_of(s).is_postgres else None
    await fault(s, Step.MERGE_APPLY)
    parent = head.head_turn_id
    await writes.move_head(
        s, head, conv, node, parent, {REVERTS_META: str(merged)}, description, surfaces, last
    )
    await fault(s, Step.MERGE_HEAD)
    out = RevertOut(
        node_id=str(node), parent_node_id=parent, reverted=str(merged), description=description
    )
    return out, unvectored


async def _labels(s: AsyncSession, conv: Conversation, nodes: list[NodeId | None]) -> list[str]:
    """How the studio labels these nodes ("4.1"); "" for None."""
    family = await Family.load(s, conv.root_thread_id)
    shown = family.shown(conv.thread_id)
    suffix = labels.suffixes(
        shown, await ledger_repo.node_times(s, labels.continuation_points(shown))
    )
    return [
        labels.label(n.turn, suffix.get(n.thread_id, [])) if n is not None else "" for n in nodes
    ]
