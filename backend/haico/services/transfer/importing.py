"""Import a family document (`FamilyExport`) as a new family owned by the caller.

The document is checked whole before anything is written: an unknown format, a
version newer than this server reads, a graph that does not hold together (no
single root, a parent listed after its child or missing, a node outside the turns
its thread owns, a merge node whose source is no node of the document), or anything
over a limit another write keeps (`Limits`: items, document and message lengths; a
text's length) answers 422 and creates nothing. A request's body is parsed,
validated and checked in a worker thread a piece at a time (`reading`), so that a
large import leaves the event loop free to answer other requests meanwhile.

The importer authors the copy: every node and note of it is the importer's, and so
are its codebooks, codings and judgments (`transfer.coding`); the author the document
records is kept beside each as `imported_author` (never taken as the author: a
document can name anyone).

Then the same three phases as a branch (`services/history/branching.py`), because the SQL
rows and the checkpointer share no transaction:

1. One transaction writes every thread with new ids (the root hidden as `building`,
   branches `pending`), their live workspaces, artifacts, one snapshot per node
   (snapshot k of a thread is the workspace its node k-1 ended with, or the thread's
   `start_workspace` for its first own turn) and the search index.
2. Each thread's transcript (the path from turn 1, a fork's inherited part first) is
   seeded into the checkpointer.
3. One transaction makes the family visible.

A failure in any phase deletes every row and checkpoint the import created and
answers 502 (`seeding_failed`); a crash between phases leaves hidden rows that the
janitor reclaims like a half-built branch or fork. Fork provenance is kept when the
source thread is the caller's; otherwise only the fork point is kept, and reads
below it answer 409 like those of a fork whose source is gone.

The document is checked first (`checking`: the plan, or a 422 before anything is
written); the three phases and the undo here are one failure story, read top to
bottom, as in `services/history/branching.py`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.runtime import AgentRuntime
from haico.agent.transcripts import from_transcript
from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.models import Artifact, Conversation, ConversationBranch, Note, WorkspaceSnapshot
from haico.db.repositories import coding as coding_repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import users as users_repo
from haico.db.repositories import workspace as workspace_repo
from haico.domain import BranchStatus, NodeId, now
from haico.errors import SeedingFailed
from haico.events import log as action_log
from haico.schemas.conversations import ConversationOut
from haico.schemas.export import (
    ExportMessage,
    ExportNode,
    ExportThread,
    ExportWorkspace,
    FamilyExport,
)
from haico.schemas.workspace import DocumentOut
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed
from haico.services.families.conversations import to_view
from haico.services.families.titles import imported_title
from haico.services.ledger.notes import index_note_in
from haico.services.merge.plan import artifact_key
from haico.services.merge.sides import base_import, recorded_state
from haico.services.search import service as search
from haico.services.transfer.checking import Plan, check, read_and_check
from haico.services.transfer.coding import import_coding
from haico.services.transfer.ledger import import_ledger, recorded_author
from haico.services.workspace.snapshots import (
    MAX_USER_MESSAGE_PREVIEW,
    SNAPSHOT_FORMAT,
    replace_workspace_in,
)
from haico.services.workspace.state import (
    PreferenceState,
    RejectedState,
    TodoState,
    WorkspaceState,
)

log = logging.getLogger("haico.import")
Progress = Callable[[int, int], None]


def workspace_state(ws: ExportWorkspace | None) -> WorkspaceState:
    if ws is None:
        return WorkspaceState(objective=None, document=None)
    doc = ws.document
    return WorkspaceState(
        objective=ws.objective,
        document=DocumentOut(title=doc.title, content=doc.content) if doc else None,
        preferences=[PreferenceState(p.uid, p.text, p.locked) for p in ws.preferences],
        todos=[TodoState(t.uid, t.text, t.done, t.depth) for t in ws.todos],
        rejected=[
            RejectedState(r.uid, r.surface, r.text, r.rejected_after_turn) for r in ws.rejected
        ],
    )


async def _snapshot(
    s: AsyncSession,
    thread_id: str,
    node: ExportNode,
    before: WorkspaceState,
    ids: dict[str, str],
) -> None:
    digest = None
    if before.document is not None:
        digest = await workspace_repo.store_body(s, before.document.content)
    merged_state = None
    if node.merge_base is not None:
        base = node.merge_base
        content = base.content
        base_digest = None if content is None else await workspace_repo.store_body(s, content)
        merged_state = recorded_state(base_import(base), base_digest)
    s.add(
        WorkspaceSnapshot(
            thread_id=thread_id,
            turn_index=node.turn_index,
            format=SNAPSHOT_FORMAT,
            objective=before.objective,
            document_title=before.document.title if before.document else None,
            document_hash=digest,
            **before.item_columns(),
            user_message=node.user_message[:MAX_USER_MESSAGE_PREVIEW],
            state=node.state,
            reply=node.reply,
            captured_at=node.captured_at or now(),
            completed_at=node.completed_at,
            kind=node.kind,
            merged_from=_merged_from(node.merged_from, ids),
            merged_state=merged_state,
            # The importer made the copy; the document's word is kept beside it.
            author=None,
            imported_author=recorded_author(node.author, node.imported_author),
        )
    )


def _merged_from(source: str | None, ids: dict[str, str]) -> str | None:
    """A merge node's source in the new family's ids (a node outside it stays as it was)."""
    node = NodeId.parse(source) if source else None
    if node is None or node.thread_id not in ids:
        return source
    return NodeId.format(ids[node.thread_id], node.turn)


async def _write_thread(
    s: AsyncSession,
    plan: Plan,
    t: ExportThread,
    *,
    principal: Principal,
    importer: str,
    fork_source: str | None,
) -> Conversation:
    new_id = plan.ids[t.thread_id]
    root = t.parent_thread_id is None
    live = workspace_state(t.workspace)
    conv = Conversation(
        thread_id=new_id,
        user_id=principal.id,
        root_thread_id=plan.ids[plan.root.thread_id],
        title=imported_title(t.title),
        name=t.name,
        turn_index=t.turn_index,
        message_count=t.message_count,
        # Stamped now while hidden, so the janitor reclaims it only if this import is
        # abandoned; the document's stamps are set when the family becomes visible.
        created_at=now(),
        updated_at=now(),
        building=root,
    )
    if root and plan.doc.forked_from is not None:
        conv.forked_from_thread_id = fork_source
        conv.forked_from_turn = plan.doc.forked_from.turn_index
    s.add(conv)
    await s.flush()
    if not root:
        assert t.parent_thread_id is not None and t.branch_point_turn is not None
        s.add(
            ConversationBranch(
                thread_id=new_id,
                parent_thread_id=plan.ids[t.parent_thread_id],
                branch_point_turn=t.branch_point_turn,
                reason=t.reason,
                status=BranchStatus.PENDING,
                created_at=now(),
            )
        )
    await replace_workspace_in(s, conv, live, fresh=True)
    for a in t.artifacts:
        s.add(
            Artifact(
                thread_id=new_id,
                turn_index=a.turn_index,
                uid=a.uid or artifact_key(a.kind, a.title, a.content),
                kind=a.kind,
                title=a.title,
                content=a.content,
                created_at=a.created_at or now(),
            )
        )
    await s.flush()
    nodes = plan.nodes[t.thread_id]
    notes: list[Note] = []
    for k in sorted(nodes):
        node = nodes[k]
        previous = nodes.get(k - 1)
        before = (
            t.start_workspace
            if k == plan.first[t.thread_id]
            else (previous.workspace if previous else None)
        )
        await _snapshot(s, new_id, node, workspace_state(before), plan.ids)
        notes.extend(
            await import_ledger(
                s,
                principal=principal,
                importer=importer,
                root_thread_id=plan.ids[plan.root.thread_id],
                thread_id=new_id,
                node=node,
                before=before,
            )
        )
        after = node.workspace.document if node.workspace else None
        await search.index_node_in(
            s,
            thread_id=new_id,
            turn_index=k,
            user_message=node.user_message,
            reply=node.reply,
            document=after.content if after else None,
        )
    await s.flush()
    for note in notes:
        await index_note_in(s, note)
    return conv


def transcript_of(plan: Plan, thread: ExportThread) -> list[tuple[int, dict[str, Any]]]:
    """The thread's whole transcript from turn 1: its path's nodes, each from the
    thread that owns it, and a fork's inherited turns first."""
    by_id = {t.thread_id: t for t in plan.doc.threads}
    owned: dict[int, ExportNode] = {}
    current: ExportThread | None = thread
    upper = thread.turn_index
    seen: set[str] = set()
    while current is not None and current.thread_id not in seen:
        seen.add(current.thread_id)
        lower = plan.first[current.thread_id]
        # Only the nodes the document has (never a walk over the turn numbers).
        for k, node in plan.nodes[current.thread_id].items():
            if lower <= k <= upper:
                owned.setdefault(k, node)
        upper = min(upper, lower - 1)
        current = by_id.get(current.parent_thread_id or "")
    out: list[tuple[int, dict[str, Any]]] = []
    if plan.doc.forked_from is not None:
        out.extend(_entries(plan.doc.inherited_messages, 0))
    for k in sorted(owned):
        out.extend(_entries(owned[k].messages, k))
    return out


def _entries(messages: list[ExportMessage], turn: int) -> list[tuple[int, dict[str, Any]]]:
    """Entries of one turn (or, inherited ones, each with its own `turn_index`)."""
    out = []
    for m in messages:
        entry = m.model_dump(exclude_none=True)
        if m.tool_calls is not None:
            entry["tool_calls"] = [c.model_dump() for c in m.tool_calls]
        out.append((m.turn_index if m.turn_index is not None else turn, entry))
    return out


async def import_body(
    db: Database, runtime: AgentRuntime, *, principal: Principal, body: bytes
) -> ConversationOut:
    """Recreate the family document `body` (a request's bytes) as a new family of
    `principal`, read and checked in a worker thread (refused before it is read when
    the principal may not import)."""
    access.permit(principal, Deed.IMPORT)
    plan = await asyncio.to_thread(read_and_check, body, db.limits)
    return await import_family(db, runtime, principal=principal, doc=plan.doc, plan=plan)


async def import_family(
    db: Database,
    runtime: AgentRuntime,
    *,
    principal: Principal,
    doc: FamilyExport,
    progress: Progress | None = None,
    plan: Plan | None = None,
) -> ConversationOut:
    """Recreate `doc` as a new family of `principal`; its new root (see the module doc).
    `plan`: the document already checked (`read_document`)."""
    access.permit(principal, Deed.IMPORT)
    plan = plan or check(doc, db.limits)
    new_ids = [plan.ids[t.thread_id] for t in doc.threads]
    books: list[int] = []
    try:
        async with db.transaction() as s:
            fork_source = None
            if doc.forked_from is not None and doc.forked_from.thread_id is not None:
                source = await threads_repo.get_thread(s, doc.forked_from.thread_id)
                if (
                    source is not None
                    and source.user_id == principal.id
                    and source.deleted_at is None
                ):
                    fork_source = source.thread_id
            importer = await users_repo.name_of(s, principal.id)
            convs = []
            for i, t in enumerate(doc.threads):
                convs.append(
                    await _write_thread(
                        s, plan, t, principal=principal, importer=importer, fork_source=fork_source
                    )
                )
                if progress is not None:
                    progress(i + 1, 2 * len(doc.threads))
            books = await import_coding(s, plan, principal=principal, importer=importer)
            await fault(s, Step.IMPORT_ROWS)
        await db.faults(Step.IMPORT_SEED)
        for i, t in enumerate(doc.threads):
            entries = transcript_of(plan, t)
            if entries:
                await runtime.seed(
                    thread_id=plan.ids[t.thread_id],
                    messages=from_transcript(entries),
                    metadata={"source": "import"},
                )
            if progress is not None:
                progress(len(doc.threads) + i + 1, 2 * len(doc.threads))
        root_id = plan.ids[plan.root.thread_id]
        async with db.transaction() as s:
            await threads_repo.finish_fork(s, root_id)
            for t, conv in zip(doc.threads, convs, strict=True):
                if t.parent_thread_id is not None:
                    await threads_repo.set_branch_status(s, conv.thread_id, BranchStatus.ACTIVE)
                await threads_repo.set_stamps(
                    s,
                    conv.thread_id,
                    created_at=t.created_at or conv.created_at,
                    updated_at=t.updated_at or conv.updated_at,
                )
            await action_log.append_catalogue(s, root_id, root_id, "created", kind="import")
            await fault(s, Step.IMPORT_ACTIVATE)
    except Exception as exc:
        log.exception("importing a family failed; removing what was created")
        await _undo(db, runtime, new_ids, books)
        raise SeedingFailed("the import failed part-way; nothing was kept, try again") from exc
    root = convs[0]
    root.building = False
    root.created_at = plan.root.created_at or root.created_at
    root.updated_at = plan.root.updated_at or root.updated_at
    return to_view(root, None)


async def _undo(
    db: Database, runtime: AgentRuntime, thread_ids: list[str], books: list[int]
) -> None:
    """Delete every checkpoint and row the import made: its threads (their codings go
    with them), the family's judgments and the codebooks it created."""
    for tid in thread_ids:
        try:
            await runtime.delete_thread(tid)
        except Exception:
            log.exception("could not delete the checkpoints of %s", tid)
    try:
        async with db.transaction() as s:
            await coding_repo.delete_imported(s, root=thread_ids[0], codebook_ids=books)
            for tid in reversed(thread_ids):
                await threads_repo.delete_thread_rows(s, tid)
    except Exception:
        log.exception("compensation could not delete the imported rows")
