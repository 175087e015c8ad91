"""Compare two nodes: what changed in the workspace from node `a` to node `b`.

Any two nodes the caller owns may be compared: siblings, a node and its descendant,
or nodes of a family and of its fork. Each side is read through the as-of function
(`snapshots.resolve_restore_state`), so exactly two workspace states are loaded,
from snapshots or live rows. Preferences and todos are matched by their stable `uid`
(copies and snapshots keep it); artifacts, which are copied with new row ids, by
their turn, kind and title.

The comparison is turn-aligned: both nodes' paths have one node per turn, so the
newest node the two paths share is their common ancestor. A fork's path continues
into the family it came from, so a family and its fork share the nodes up to the
fork point.
"""

from __future__ import annotations

import difflib
from collections import Counter
from typing import TypeVar

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Conversation
from haico.db.repositories import ledger as ledger_repo
from haico.db.repositories import threads as threads_repo
from haico.domain import NodeId
from haico.errors import InvalidInput, InvalidTurn
from haico.schemas.compare import (
    ArtifactsDiff,
    CompareNode,
    Comparison,
    DocumentDiff,
    ObjectiveDiff,
    PreferenceChange,
    PreferenceField,
    PreferencesDiff,
    RejectedSides,
    TodoChange,
    TodoField,
    TodosDiff,
)
from haico.schemas.workspace import ArtifactSummary, PreferenceOut, TodoOut
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import get_for
from haico.services.families.model import Lineage
from haico.services.ledger.provenance import edit_origin
from haico.services.workspace.snapshots import resolve_restore_state
from haico.services.workspace.state import WorkspaceState

Item = TypeVar("Item", PreferenceOut, TodoOut)


def parse_node(text: str, *, name: str) -> NodeId:
    node = NodeId.parse(text)
    if node is None:
        raise InvalidInput(f"{name}: not a node id (expected th_<32 hex>:<turn>)")
    return node


async def node_path(s: AsyncSession, node: NodeId) -> list[NodeId]:
    """The nodes from turn 1 to `node`, oldest first, one per turn; a fork's path goes
    on into its source family below the fork point."""
    segments: list[list[NodeId]] = []
    thread_id, turn = node.thread_id, node.turn
    seen: set[str] = set()
    while turn > 0 and thread_id not in seen:
        seen.add(thread_id)
        lineage = await Lineage.load(s, thread_id)
        if not lineage.entries:
            break
        segments.append(lineage.path_to(turn))
        root = lineage.entries[-1]
        if root.forked_from_thread_id is None:
            break
        thread_id, turn = root.forked_from_thread_id, min(turn, root.forked_from_turn or 0)
    return [n for segment in reversed(segments) for n in segment]


def common_ancestor(a: list[NodeId], b: list[NodeId]) -> NodeId | None:
    """The newest node both paths share (paths share a prefix, if anything)."""
    found = None
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        found = x
    return found


def _document_diff(a: WorkspaceState, b: WorkspaceState, labels: tuple[str, str]) -> DocumentDiff:
    before = a.document.content if a.document else ""
    after = b.document.content if b.document else ""
    lines = list(
        difflib.unified_diff(
            before.splitlines(),
            after.splitlines(),
            fromfile=labels[0],
            tofile=labels[1],
            lineterm="",
        )
    )
    body = [line for line in lines if not line.startswith(("---", "+++"))]
    title_before = a.document.title if a.document else None
    title_after = b.document.title if b.document else None
    return DocumentDiff(
        title_before=title_before,
        title_after=title_after,
        changed=bool(lines) or title_before != title_after,
        diff="\n".join(lines),
        added_lines=sum(1 for line in body if line.startswith("+")),
        removed_lines=sum(1 for line in body if line.startswith("-")),
    )


def _matched(before: list[Item], after: list[Item]) -> tuple[list[Item], list[Item], list[str]]:
    """Items only in `after`, only in `before`, and the uids in both (in `after`'s order)."""
    old = {i.uid for i in before}
    new = {i.uid for i in after}
    return (
        [i for i in after if i.uid not in old],
        [i for i in before if i.uid not in new],
        [i.uid for i in after if i.uid in old],
    )


def _preferences(a: list[PreferenceOut], b: list[PreferenceOut]) -> PreferencesDiff:
    added, removed, both = _matched(a, b)
    old, new = {p.uid: p for p in a}, {p.uid: p for p in b}
    changed = []
    for uid in both:
        fields: list[PreferenceField] = [
            f for f in ("text", "locked") if getattr(old[uid], f) != getattr(new[uid], f)
        ]
        if fields:
            changed.append(
                PreferenceChange(uid=uid, before=old[uid], after=new[uid], fields=fields)
            )
    return PreferencesDiff(added=added, removed=removed, changed=changed)


def _todos(a: list[TodoOut], b: list[TodoOut]) -> TodosDiff:
    added, removed, both = _matched(a, b)
    old, new = {t.uid: t for t in a}, {t.uid: t for t in b}
    changed = []
    for uid in both:
        fields: list[TodoField] = [
            f for f in ("text", "done", "depth") if getattr(old[uid], f) != getattr(new[uid], f)
        ]
        if fields:
            changed.append(TodoChange(uid=uid, before=old[uid], after=new[uid], fields=fields))
    return TodosDiff(added=added, removed=removed, changed=changed)


def _artifacts(a: list[ArtifactSummary], b: list[ArtifactSummary]) -> ArtifactsDiff:
    """Copies get new ids but keep their uid: an artifact is known by its uid."""

    def key(x: ArtifactSummary) -> str:
        return x.uid

    def only(xs: list[ArtifactSummary], others: list[ArtifactSummary]) -> list[ArtifactSummary]:
        left = Counter(key(o) for o in others)
        out = []
        for x in xs:
            if left[key(x)] > 0:
                left[key(x)] -= 1
            else:
                out.append(x)
        return out

    return ArtifactsDiff(added=only(b, a), removed=only(a, b))


async def _side(
    s: AsyncSession, *, principal: Principal, node: NodeId
) -> tuple[Conversation, WorkspaceState]:
    conv, _ = await get_for(s, principal, thread_id=node.thread_id, need=Role.VIEWER)
    if node.turn > conv.turn_index:
        raise InvalidTurn(f"node {node} does not exist (the thread is at turn {conv.turn_index})")
    return conv, await resolve_restore_state(s, conv, node.turn)


def _end(conv: Conversation, node: NodeId) -> CompareNode:
    return CompareNode(
        node_id=str(node),
        thread_id=node.thread_id,
        root_thread_id=conv.root_thread_id,
        turn_index=node.turn,
    )


async def compare(
    db: Database, *, principal: Principal, thread_id: str, a: str, b: str
) -> Comparison:
    """The workspace at node `b` against node `a`; both must be the caller's."""
    node_a, node_b = parse_node(a, name="a"), parse_node(b, name="b")
    async with db.read() as s:
        await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        conv_a, state_a = await _side(s, principal=principal, node=node_a)
        conv_b, state_b = await _side(s, principal=principal, node=node_b)
        path_b = await node_path(s, node_b)
        shared = common_ancestor(await node_path(s, node_a), path_b)
        # Who made the changes on b's side: the edits of b's path after the shared node.
        since = path_b.index(shared) + 1 if shared in path_b else 0
        keys = [(n.thread_id, n.turn) for n in path_b[since:]]
        # A branch's first node also owns the edits made to its restored view before
        # its first message (recorded at the branch point, on the branch's thread).
        keys += [
            (n.thread_id, n.turn - 1)
            for prev, n in zip(
                path_b[since - 1 : -1] if since else [], path_b[since:], strict=False
            )
            if prev.thread_id != n.thread_id
        ]
        if since == 0 and path_b:
            keys.append((path_b[0].thread_id, path_b[0].turn - 1))
        edits = await ledger_repo.edits_at(s, keys)
        ancestor = None
        if shared is not None:
            owner = await threads_repo.get_thread(s, shared.thread_id)
            if owner is not None:
                ancestor = _end(owner, shared)
    out_a, out_b = state_a.to_out(), state_b.to_out()
    return Comparison(
        a=_end(conv_a, node_a),
        b=_end(conv_b, node_b),
        common_ancestor=ancestor,
        objective=ObjectiveDiff(
            before=state_a.objective,
            after=state_b.objective,
            changed=state_a.objective != state_b.objective,
        ),
        document=_document_diff(state_a, state_b, (str(node_a), str(node_b))),
        preferences=_preferences(out_a.preferences, out_b.preferences),
        todos=_todos(out_a.todos, out_b.todos),
        artifacts=_artifacts(out_a.artifacts, out_b.artifacts),
        rejected=RejectedSides(a=out_a.rejected, b=out_b.rejected),
        edits=[edit_origin(e) for e in edits],
    )
