"""The history graph of a family: its threads, one node per owned turn, and the edges.

Read-only, and a fixed number of SQL queries whatever the family's size or depth:
ownership, the family's threads with their branch rows (one indexed query on
`root_thread_id`), the newest `node_cap + 1` turn records of the shown threads, one
grouped artifact count, the nodes' models and their notes' codes (the research ledger,
one query), and the family's durable head. When the cap drops nodes, one more reads the
turn records of the requested thread's path that it dropped: the cap never hides the
path being displayed, so a deep path may take the graph past `node_cap` nodes (the cap
counts the newest nodes; the path comes on top), and `truncated` says whether a node
was left out after that. Which threads are shown, lineages, the owners of branch
points, the active path and the edges are worked out in memory, in time linear in the
family.

A thread owns its turns after its branch point (a root owns them all); turns up to the
branch point belong to ancestors and are reached through the lineage, so node `T:k`'s
parent is `T:(k-1)` when T owns it, else the branch-point node in T's lineage. A
branch at 0 starts at a root-level node: no parent, no branch edge.
"""

from __future__ import annotations

from typing import Literal

from haico.db.engine import Database
from haico.db.repositories import graph as repo
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import ledger as ledger_repo
from haico.db.repositories.graph import NodeRow
from haico.domain import NodeId, NodeKind, aware
from haico.schemas.graph import GraphEdge, GraphNode, GraphOut, GraphThread
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import get_for
from haico.services.families.model import Family
from haico.services.workspace.snapshots import MAX_USER_MESSAGE_PREVIEW


def _edges(family: Family, kept: dict[str, NodeRow]) -> list[GraphEdge]:
    """Turn and branch edges whose two endpoints are both kept (never a dangling one)."""
    edges: list[GraphEdge] = []
    for target, node in kept.items():
        source: str | None = None
        kind: Literal["turn", "branch"] = "turn"
        reason: str | None = None
        if node.turn_index > family.first_owned(node.thread_id):
            source = NodeId.format(node.thread_id, node.turn_index - 1)
        else:
            anchor = family.branch_point_node(node.thread_id)
            if anchor is not None:
                source = str(anchor)
                kind, reason = "branch", family.threads[node.thread_id].reason
        if source is not None and source in kept:
            edges.append(
                GraphEdge(
                    id=f"{source}->{target}",
                    source=source,
                    target=target,
                    kind=kind,
                    reason=reason,
                )
            )
        merged = node.merged_from
        # A source in another family (a fork's) is not drawn: no dangling edge.
        if merged is not None and merged in kept and merged != source:
            edges.append(
                GraphEdge(id=f"{merged}->{target}", source=merged, target=target, kind="merge")
            )
    return edges


def _path_ranges(family: Family, limits: dict[str, int]) -> dict[str, tuple[int, int]]:
    """The displayed path's owned turns per thread (first, last): read with the newest
    nodes, so that the cap never hides them."""
    return {t: (family.first_owned(t), last) for t, last in limits.items() if t in family.threads}


async def build_graph(
    db: Database, *, principal: Principal, thread_id: str, node_cap: int
) -> GraphOut:
    """The whole family of `thread_id` as a DAG, capped at `node_cap` nodes (oldest dropped)."""
    # One snapshot: a turn closing between the node reads and the head read would
    # otherwise give a head on a node the answer does not hold.
    async with db.read(snapshot=True) as session:
        conv, _ = await get_for(session, principal, thread_id=thread_id, need=Role.VIEWER)
        root_thread_id = conv.root_thread_id
        family = await Family.load(session, root_thread_id)
        shown = family.shown(thread_id)
        limits = family.path_limits(thread_id)
        # The cap never hides the displayed path: its nodes are always sent, on top of
        # the newest ones (the path of a deep family can exceed the cap itself); they
        # come in the same query, so a capped family costs no extra round trip.
        owned = sum(max(0, t.turn_index - family.first_owned(t.thread_id) + 1) for t in shown)
        newest, path_rows = await repo.newest_owned_nodes(
            session,
            thread_ids=[t.thread_id for t in shown],
            limit=node_cap + 1,
            preview_chars=MAX_USER_MESSAGE_PREVIEW,
            # (only a family larger than the cap can leave path nodes out)
            also=_path_ranges(family, limits) if owned > node_cap else None,
        )
        capped = len(newest) > node_cap
        kept_rows = newest[:node_cap]
        if capped:
            have = {(n.thread_id, n.turn_index) for n in kept_rows}
            # (the one newest row past the cap counts too when it is on the path)
            extra = [n for n in newest[node_cap:] if n.thread_id in limits]
            kept_rows += [
                n
                for n in (*extra, *path_rows)
                if (n.thread_id, n.turn_index) not in have
                and family.first_owned(n.thread_id) <= n.turn_index <= limits[n.thread_id]
            ]
        # Truncated: a node of the shown threads is left out. The path sent on top can
        # bring back every node the cap dropped; the answer is then whole.
        truncated = capped and len(kept_rows) < owned
        counts = await repo.artifact_counts(session, {n.thread_id for n in kept_rows})
        models, codes = await ledger_repo.models_and_codes(
            session, {n.thread_id for n in kept_rows}
        )
        durable = await heads_repo.get_head(session, root_thread_id)
    if durable is not None:
        head = durable.head_turn_id
    else:
        tip = family.tip(thread_id)
        head = str(tip) if tip is not None else None

    order = {row.thread_id: i for i, row in enumerate(shown)}
    kept_rows.sort(key=lambda n: (order[n.thread_id], n.turn_index))
    kept = {NodeId.format(n.thread_id, n.turn_index): n for n in kept_rows}

    nodes = [
        GraphNode(
            id=nid,
            thread_id=n.thread_id,
            turn_index=n.turn_index,
            user_message=n.user_message,
            captured_at=aware(n.captured_at),
            artifact_count=counts.get((n.thread_id, n.turn_index), 0),
            is_on_active_path=n.turn_index <= limits.get(n.thread_id, -1),
            state=n.state,
            model=models.get((n.thread_id, n.turn_index)),
            codes=codes.get((n.thread_id, n.turn_index), []),
            kind="turn" if n.kind == NodeKind.TURN else "merge",
        )
        for nid, n in kept.items()
    ]
    archived = family.archived()
    threads = [
        GraphThread(
            thread_id=t.thread_id,
            title=t.title,
            name=t.name,
            parent_thread_id=t.parent_thread_id,
            branch_point_turn=t.branch_point_turn,
            reason=t.reason,
            turn_index=t.turn_index,
            deleted=t.deleted,
            summary=t.summary,
            archived=t.thread_id in archived,
        )
        for t in shown
    ]
    return GraphOut(
        root_thread_id=root_thread_id,
        head_turn_id=head,
        truncated=truncated,
        threads=threads,
        nodes=nodes,
        edges=_edges(family, kept),
    )
