"""Export a family as one versioned JSON document (`FamilyExport`, format version 1).

The document holds what is needed to build the family again: every visible thread
(the root and its active branches; drafts, half-built and deleted branches are left
out) with its branch link, name, live workspace and artifacts; every node a thread
owns with its state, user message, reply, transcript entries (tool calls and their
results included) and the workspace after it, read through the as-of function; and,
for a fork, where it came from and the transcript it carried over; for a merge node,
the source's workspace as it was brought in (the base of a later merge of that path).
No row id is in it: items and artifacts are known by `uid`.

`start_workspace` of a thread is what its first own turn started from (its first
snapshot); with the nodes' workspaces it gives back every snapshot on import.

The family's coding (the codebooks its codings use, the codings and the judgments
its reader sees) travels with it (`transfer.coding`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

from haico.agent.runtime import AgentRuntime, TranscriptMessage
from haico.db.engine import Database
from haico.db.models import Artifact, Conversation
from haico.db.repositories import merge as merge_repo
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import workspace as workspace_repo
from haico.domain import NodeId, aware, now
from haico.errors import SnapshotMissing
from haico.schemas.export import (
    EXPORT_FORMAT,
    EXPORT_VERSION,
    ExportArtifact,
    ExportArtifactRef,
    ExportDocument,
    ExportForkedFrom,
    ExportMergeBase,
    ExportMessage,
    ExportNode,
    ExportPreference,
    ExportRejected,
    ExportThread,
    ExportTodo,
    ExportToolCall,
    ExportWorkspace,
    FamilyExport,
)
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.families.conversations import get_for
from haico.services.families.model import Family
from haico.services.merge.sides import base_export, recorded_side
from haico.services.transfer.coding import export_coding
from haico.services.transfer.ledger import export_ledger
from haico.services.workspace.snapshots import resolve_restore_state
from haico.services.workspace.state import WorkspaceState, live_state

Progress = Callable[[int, int], None]


def export_workspace(state: WorkspaceState) -> ExportWorkspace:
    doc = state.document
    return ExportWorkspace(
        objective=state.objective,
        document=ExportDocument(title=doc.title, content=doc.content) if doc else None,
        preferences=[
            ExportPreference(uid=p.uid, text=p.text, locked=p.locked) for p in state.preferences
        ],
        todos=[ExportTodo(uid=t.uid, text=t.text, done=t.done, depth=t.depth) for t in state.todos],
        rejected=[ExportRejected(**r.to_json()) for r in state.rejected],
        artifacts=[
            ExportArtifactRef(turn_index=a.turn_index, kind=a.kind, title=a.title, uid=a.uid)
            for a in state.artifacts
        ],
    )


def export_message(m: TranscriptMessage, *, with_turn: bool = False) -> ExportMessage:
    extra: dict[str, Any] = m.extra
    calls = extra.get("tool_calls")
    return ExportMessage(
        role=m.role,
        content=m.content,
        turn_index=m.turn_index if with_turn else None,
        tool_calls=[ExportToolCall(**c) for c in calls] if calls else None,
        state=extra.get("state"),
        name=extra.get("name"),
        tool_call_id=extra.get("tool_call_id"),
        status=extra.get("status"),
    )


def _artifact(a: Artifact) -> ExportArtifact:
    return ExportArtifact(
        uid=a.uid,
        turn_index=a.turn_index,
        kind=a.kind,
        title=a.title,
        content=a.content,
        created_at=aware(a.created_at),
    )


async def _as_of(s: Any, conv: Conversation, turn: int) -> ExportWorkspace | None:
    try:
        return export_workspace(await resolve_restore_state(s, conv, turn))
    except SnapshotMissing:
        return None


async def export_family(
    db: Database,
    runtime: AgentRuntime,
    *,
    principal: Principal,
    thread_id: str,
    progress: Progress | None = None,
) -> FamilyExport:
    """The family of `thread_id` as one document; `progress(done, total)` per node."""
    access.permit(principal, Deed.EXPORT)
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        family = await Family.load(s, conv.root_thread_id)
        shown = family.shown(conv.root_thread_id)
        convs: dict[str, Conversation] = {}
        for row in shown:
            found = await threads_repo.get_thread(s, row.thread_id)
            assert found is not None
            convs[row.thread_id] = found
        order = {t: i for i, t in enumerate(convs)}
        records = sorted(
            (
                r
                for r in await snap_repo.node_records(s, list(convs))
                if family.first_owned(r.thread_id) <= r.turn_index <= convs[r.thread_id].turn_index
            ),
            key=lambda r: (order[r.thread_id], r.turn_index),
        )
        threads: list[ExportThread] = []
        for row in shown:
            tconv = convs[row.thread_id]
            first = family.first_owned(row.thread_id)
            owns_turns = tconv.turn_index >= first
            threads.append(
                ExportThread(
                    thread_id=row.thread_id,
                    parent_thread_id=row.parent_thread_id,
                    branch_point_turn=row.branch_point_turn,
                    reason=row.reason,
                    title=tconv.title,
                    name=tconv.name,
                    turn_index=tconv.turn_index,
                    message_count=tconv.message_count,
                    created_at=aware(tconv.created_at),
                    updated_at=aware(tconv.updated_at),
                    start_workspace=await _as_of(s, tconv, first - 1) if owns_turns else None,
                    workspace=export_workspace(await live_state(s, tconv)),
                    artifacts=[
                        _artifact(a) for a in await workspace_repo.list_artifacts(s, row.thread_id)
                    ],
                )
            )
        after: dict[NodeId, ExportWorkspace | None] = {}
        for i, r in enumerate(records):
            after[NodeId(r.thread_id, r.turn_index)] = await _as_of(
                s, convs[r.thread_id], r.turn_index
            )
            if progress is not None:
                progress(i + 1, len(records))
        root = convs[conv.root_thread_id]
        ledger = await export_ledger(s, list(convs))
        codebooks, codings, judgments = await export_coding(
            s,
            principal,
            root=conv.root_thread_id,
            nodes={(r.thread_id, r.turn_index) for r in records},
        )
        bases: dict[tuple[str, int], ExportMergeBase] = {
            key: base_export(await recorded_side(s, state))
            for key, state in (await merge_repo.merged_states(s, list(convs))).items()
        }
    transcripts = {
        t: runtime.to_transcript(await runtime.raw_messages(t))
        for t in {r.thread_id for r in records} | {root.thread_id}
    }
    fork_point = root.forked_from_turn or 0
    inherited = [m for m in transcripts[root.thread_id] if m.turn_index <= fork_point]
    nodes = []
    for r in records:
        entries = [m for m in transcripts[r.thread_id] if m.turn_index == r.turn_index]
        user = next((m.content for m in entries if m.role == "user"), r.user_message)
        nodes.append(
            ExportNode(
                id=NodeId.format(r.thread_id, r.turn_index),
                thread_id=r.thread_id,
                turn_index=r.turn_index,
                state=r.state,
                captured_at=aware(r.captured_at),
                completed_at=aware(r.completed_at) if r.completed_at else None,
                user_message=user,
                reply=r.reply,
                messages=[export_message(m) for m in entries],
                workspace=after[NodeId(r.thread_id, r.turn_index)],
                **ledger.get((r.thread_id, r.turn_index), {}),
                kind=_kind(r.kind),
                merged_from=r.merged_from,
                merge_base=bases.get((r.thread_id, r.turn_index)),
                author=r.author,
                imported_author=r.imported_author,
            )
        )
    forked = (
        ExportForkedFrom(thread_id=root.forked_from_thread_id, turn_index=fork_point)
        if root.forked_from_turn is not None
        else None
    )
    return FamilyExport(
        format=EXPORT_FORMAT,
        version=EXPORT_VERSION,
        exported_at=now(),
        root_thread_id=root.thread_id,
        forked_from=forked,
        inherited_messages=[export_message(m, with_turn=True) for m in inherited],
        threads=threads,
        nodes=nodes,
        codebooks=codebooks,
        codings=codings,
        judgments=judgments,
    )


_KINDS: dict[str, Literal["merge", "pick", "revert"]] = {
    "merge": "merge",
    "pick": "pick",
    "revert": "revert",
}


def _kind(kind: str) -> Literal["turn", "merge", "pick", "revert"]:
    return _KINDS.get(kind, "turn")
