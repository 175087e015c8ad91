"""Bring a path back: pick one node's change, or merge a path, into a thread as one node.

A preview plans against the target thread's live workspace and writes nothing. An
apply is one transaction under the family lock, like a turn's opening and close
together:

1. lock the thread and the family's head (on PostgreSQL, in the same statement, walk
   both threads up: `lineage.lock_with_lineages`); refuse during an active turn, on a stale
   expected head, and (unless `force`) when making the thread the working one would
   discard an edited draft — that implicit checkout happens in this transaction;
2. read base, ours and theirs (`sides.py`; on PostgreSQL, when nothing is written yet,
   the two live workspaces on a second pooled connection while this one reads the
   base), plan (`plan.py`) and settle the conflicts with the resolutions (`MERGE_PLAN`);
3. the node's record: snapshot k of the workspace before the merge (the snapshot
   rule, as a turn), as a complete merge node with its source and the source's
   workspace as merged (a later merge's base), the bodies it names and the clock at
   k (`MERGE_NODE`);
4. change the live workspace: objective, the items that differ (removals kept as
   rejected decisions stamped k), artifacts copied stamped k, each change recorded
   in the research ledger with origin `merge` (`MERGE_APPLY`); on a linear host the
   nodes off the new path are pruned, as a send prunes them;
5. move the head onto the node and log `chat/turnStarted` (a system notification
   with `_meta["haico/mergedFrom"]`), the workspace changes and `chat/turnComplete`
   (`MERGE_HEAD`).

The writes of steps 3 to 5 are independent of one another, so they go in one
statement where they can (`dialect.execute_all`'s rules): the head's, which also
carries the node's record, the document's row and its search entry, and on
PostgreSQL the items' changes and the ledger's rows as writes of arrays. What goes
through the session before it: the objective, a new document row, copied artifacts
(and every item and ledger row on SQLite); on a linear host the node's record too,
since the prune reads it.

A failure, or a kill, at any step leaves nothing. The one write before that
transaction is a send's: a target that is the family's working draft is first made
a branch (`promotion.promote_draft`), exactly as a message sent there would. The one
after it: on PostgreSQL the merged document's search entry is written without its
text-search vector, which `services.search.vectors` computes once the merge has
committed (a kill in between leaves it for the next start to compute).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter
from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.runtime import AgentRuntime
from haico.db.dialect import dialect_of, execute_all
from haico.db.engine import Database, fault, limits_of
from haico.db.faults import Step
from haico.db.models import ActiveTurn, ChatHead, Conversation, ConversationBranch
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import lineage as lineage_repo
from haico.domain import BranchStatus, NodeId, NodeKind
from haico.errors import (
    Conflict,
    InvalidInput,
    MergeConflict,
    NotFound,
    NothingToMerge,
    TurnInProgress,
)
from haico.schemas.merge import (
    LinePick,
    MergeChange,
    MergeIn,
    MergeMode,
    MergeOut,
    MergePlan,
    MergeResolution,
)
from haico.services.access.principal import Feature, Principal, require
from haico.services.access.rule import Role
from haico.services.big_trees import pruning
from haico.services.compare.nodes import parse_node
from haico.services.families.conversations import check_for, get_for
from haico.services.history import heads
from haico.services.history.promotion import promote_draft
from haico.services.merge import plan as planner
from haico.services.merge import result as merging
from haico.services.merge import writes
from haico.services.merge.sides import Sides, load_sides
from haico.services.search import service as search
from haico.services.search.vectors import VectorFiller, fill_node

UNSET: Any = object()


# A plan can list hundreds of changes: validated as one list (pydantic's own loop),
# which costs less than building them one by one.
_CHANGES = TypeAdapter(list[MergeChange])


def plan_out(mode: MergeMode, source: NodeId, sides: Sides, plan: planner.Plan) -> MergePlan:
    return MergePlan(
        mode=mode,
        source=str(source),
        base=str(sides.base_node) if sides.base_node else None,
        target=str(sides.target_node) if sides.target_node else None,
        changes=_CHANGES.validate_python(
            [
                {
                    "id": c.id,
                    "surface": c.surface,
                    "uid": c.uid,
                    "kind": c.kind,
                    "base": c.base,
                    "ours": c.ours,
                    "theirs": c.theirs,
                    "conflict": c.conflict,
                    "fields": c.fields,
                    "conflict_fields": c.clashes,
                }
                for c in plan.changes
            ]
        ),
    )


async def preview(
    db: Database, *, principal: Principal, thread_id: str, body: MergeIn
) -> MergePlan:
    """The plan against the workspace a merge would target; nothing is written."""
    require(principal, Feature.MERGE)
    source = parse_node(body.source, name="source")
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        sides = await load_sides(
            s, principal=principal, target=conv, source=source, mode=body.mode, beside=db
        )
    return plan_out(body.mode, source, sides, planner.plan(sides.base, sides.ours, sides.theirs))


def resolutions_of(given: Mapping[str, MergeResolution] | None) -> dict[str, planner.Resolution]:
    """The request's resolutions as the planner takes them (a line pick as `Lines`)."""
    return {
        key: planner.Lines(tuple((p.side, p.n) for p in choice.lines))
        if isinstance(choice, LinePick)
        else choice
        for key, choice in (given or {}).items()
    }


class _NeedsPromotion(Exception):
    """The target is the family's working draft: it must become a branch first."""


async def merge(
    db: Database,
    runtime: AgentRuntime,
    *,
    principal: Principal,
    thread_id: str,
    body: MergeIn,
    expected_head_turn_id: Any = UNSET,
    retains: bool = True,
    vectors: VectorFiller | None = None,
) -> MergeOut:
    """Apply a merge or a pick (see the module doc). On a linear host (`retains`
    false) the nodes off the new path are pruned with it, as a send prunes them.
    The merged document's search vector is computed after the commit: by `vectors`
    in the background (a server), or here, before returning, without it (the CLI)."""
    require(principal, Feature.MERGE)
    source = parse_node(body.source, name="source")
    for attempt in range(2):
        try:
            out, pruned, unvectored = await _apply(
                db,
                principal=principal,
                thread_id=thread_id,
                source=source,
                body=body,
                expected=expected_head_turn_id,
                retains=retains,
            )
            if pruned is not None and pruned.turn_ids:
                await pruning.after_prune(runtime, pruned)
            if unvectored is not None:
                if vectors is not None:
                    vectors.kick(unvectored)
                else:
                    await fill_node(db, unvectored)
            return out
        except _NeedsPromotion:
            if attempt:
                raise Conflict("the conversation's history moved while merging; retry") from None
            await promote_draft(db, runtime, thread_id)
    raise AssertionError("unreachable")


async def _apply(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    source: NodeId,
    body: MergeIn,
    expected: Any,
    retains: bool,
) -> tuple[MergeOut, pruning.PruneResult | None, NodeId | None]:
    async with db.transaction() as s:
        locked = await _lock(s, thread_id=thread_id, principal=principal, source=source)
        conv, branch, head = locked.conv, locked.branch, locked.head
        if locked.active is not None:
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
            locked.read_only = False  # the implicit checkout writes
            locked.loaded = None  # (and may move what the walks read)
            await heads.make_working_in(
                s, head, conv, branch, force=body.force, principal=principal
            )
            if head.working_thread_id != conv.thread_id:
                raise Conflict("this thread's latest turns were pruned; send a message there first")
        elif draft:
            raise _NeedsPromotion
        # Nothing written yet: the live rows may be read on another connection.
        sides = await load_sides(
            s,
            principal=principal,
            target=conv,
            source=source,
            mode=body.mode,
            beside=db if locked.read_only else None,
            loaded=locked.loaded,
        )
        plan = planner.plan(sides.base, sides.ours, sides.theirs)
        try:
            result = merging.merge_result(
                plan, sides.ours, sides.theirs, resolutions_of(body.resolutions)
            )
        except merging.UnknownChange as exc:
            raise InvalidInput(f"resolutions: no change {', '.join(exc.args[0])}") from exc
        except merging.NotBoth as exc:
            raise InvalidInput(
                f"resolutions: 'both' and a line pick settle a document change only, "
                f"not {', '.join(exc.args[0])}"
            ) from exc
        except merging.BadLines as exc:
            raise InvalidInput(f"resolutions: {exc.args[0]}: {exc.args[1]}") from exc
        except merging.Unresolved as exc:
            raise MergeConflict(
                f"{len(exc.args[0])} conflict(s) need a resolution (ours or theirs)",
                data={"plan": plan_out(body.mode, source, sides, plan).model_dump(mode="json")},
            ) from exc
        if not result.brought:
            raise NothingToMerge(f"{thread_id} already has everything {source} would bring")
        _check_limits(s, result.side)
        await fault(s, Step.MERGE_PLAN)
        label = body.label or _label(source, sides.source_conv, conv)
        description = f"Brought in from {label}: {merging.summary(result.brought)}"
        kind = NodeKind.PICK if body.mode == "pick" else NodeKind.MERGE
        node, last = await writes.node_writes(s, conv, sides, source, kind, description)
        if not retains:  # the prune below reads the family's nodes, this one included
            await execute_all(s, *last)
            last = []
        await fault(s, Step.MERGE_NODE)
        surfaces, changes = await writes.write_workspace(s, conv, node.turn, sides, result)
        last += changes
        unvectored = None
        # No turn runs (checked above, under the family's lock) and node k is new.
        entry = (
            search.new_node_document_write(
                s, conv, branch, result.side.content, before=sides.ours.content
            )
            if "document" in surfaces
            else None
        )
        if entry is not None:
            last.append(entry)
            unvectored = node if dialect_of(s).is_postgres else None
        await fault(s, Step.MERGE_APPLY)
        # After the copies: a pruned source's artifacts are read above.
        pruned = None if retains else await pruning.linear_prune_in(s, head, active=node)
        parent = head.head_turn_id
        # The node's record, and on PostgreSQL the workspace's rows, go in the head's
        # statement; the answer's plan is built while the database runs it.
        moving = asyncio.ensure_future(
            writes.move_head(
                s,
                head,
                conv,
                node,
                parent,
                writes.merge_meta(source, body.mode),
                description,
                surfaces,
                last,
            )
        )
        await asyncio.sleep(0)  # (the statement is on its way)
        try:
            out = plan_out(body.mode, source, sides, plan)
        finally:
            await moving
        await fault(s, Step.MERGE_HEAD)
        merged = MergeOut(
            node_id=str(node),
            parent_node_id=parent,
            merged_from=str(source),
            mode=body.mode,
            description=description,
            plan=out,
        )
        return merged, pruned, unvectored


@dataclass
class _Locked:
    conv: Conversation
    branch: ConversationBranch | None
    head: ChatHead
    active: ActiveTurn | None
    # Nothing written yet (the head row existed).
    read_only: bool
    # PostgreSQL: the walks up from the source's thread and the target, read with the
    # lock (None: `load_sides` walks them).
    loaded: lineage_repo.Loaded | None


async def _lock(
    s: AsyncSession, *, thread_id: str, principal: Principal, source: NodeId
) -> _Locked:
    """`heads.lock_for` (waiting) with the family's active turn as of the
    locks, in one read when the head row exists; on PostgreSQL that read also walks
    both threads up (`lineage.lock_with_lineages`)."""
    if dialect_of(s).is_postgres:
        found = await lineage_repo.lock_with_lineages(s, thread_id, (source.thread_id, thread_id))
    else:
        plain = await heads_repo.lock_with_head_and_turn(s, thread_id)
        found = None if plain is None else (*plain, None)
    if found is None:
        conv, branch, head = await heads.lock_for(s, principal, thread_id=thread_id)
        active = await heads_repo.get_active_turn(s, conv.root_thread_id)
        return _Locked(conv, branch, head, active, read_only=False, loaded=None)
    conv, branch, head, active, loaded = found
    await check_for(s, principal, conv, branch, need=Role.EDITOR)
    return _Locked(conv, branch, head, active, read_only=True, loaded=loaded)


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
