"""The chosen path: at each fork of a family, the child a user last went down, and the
node at the end of the path the user last looked at. Per user, on the server, so every
browser of that user opens a family on the same path.

`remember` takes the node the studio shows and records, for every fork above it (a
node some active branch hangs from, or the baseline when branches start at 0), the
child on the way to it, plus the node itself under `LAST`. `recall` answers the
remembered node while it still exists and is not archived; otherwise it walks down
from the root, following the recorded children (else the oldest child) to a leaf.
The AHP `fetchTurns` default path is the head's, untouched by any of this.
"""

from __future__ import annotations

from haico.db.engine import Database
from haico.db.repositories import path_choices as repo
from haico.db.repositories.threads import ThreadRow
from haico.domain import NodeId
from haico.errors import NotFound
from haico.schemas.trees import ChosenPathOut, PathChoiceOut
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import get_for
from haico.services.families.model import Family

LAST = "@last"  # the row holding the end of the path last shown
BASELINE = "@root"  # the "fork" of root-level nodes (branches at 0)


def _visible(family: Family) -> list[ThreadRow]:
    """The family's listed, unarchived threads, parents first."""
    archived = family.archived()
    return [t for t in family.shown(family.root_thread_id) if t.thread_id not in archived]


def _forks(family: Family) -> set[str]:
    """Nodes some active, visible branch hangs from (BASELINE for branches at 0)."""
    out: set[str] = set()
    for row in _visible(family):
        if row.parent_thread_id is None:
            continue
        anchor = family.branch_point_node(row.thread_id)
        out.add(str(anchor) if anchor is not None else BASELINE)
    return out


def _children(family: Family, visible: list[ThreadRow], node: NodeId | None) -> list[NodeId]:
    """The visible children of `node` (None: the root-level nodes), oldest first."""
    kids: list[NodeId] = []
    for row in visible:
        first = family.first_owned(row.thread_id)
        candidate = NodeId(row.thread_id, first)
        if candidate in family.nodes and family.parent(candidate) == node:
            kids.append(candidate)
    if node is not None:
        nxt = NodeId(node.thread_id, node.turn + 1)
        if nxt in family.nodes and nxt not in kids:
            kids.insert(0, nxt)
    return kids


def _walk_down(family: Family, picks: dict[str, str]) -> NodeId | None:
    """From the root down, the recorded child at each fork (else the oldest), to a leaf."""
    visible = _visible(family)
    node: NodeId | None = None
    seen: set[NodeId] = set()
    while True:
        kids = _children(family, visible, node)
        if not kids:
            return node
        chosen = NodeId.parse(picks.get(str(node) if node else BASELINE, ""))
        node = chosen if chosen in kids else kids[0]
        if node in seen:
            return node
        seen.add(node)


async def recall(db: Database, *, principal: Principal, thread_id: str) -> ChosenPathOut:
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        root = conv.root_thread_id
        picks = await repo.choices(s, user_id=principal.id, root_thread_id=root)
        family = await Family.load(s, root, nodes=True)
    last = NodeId.parse(picks.get(LAST, ""))
    visible = {t.thread_id for t in _visible(family)}
    if last is None or last not in family.nodes or last.thread_id not in visible:
        last = _walk_down(family, picks) if picks else None
    return ChosenPathOut(
        root_thread_id=root,
        node_id=str(last) if last is not None else None,
        choices=[
            PathChoiceOut(fork_node_id=f, child_node_id=c)
            for f, c in sorted(picks.items())
            if f != LAST
        ],
    )


async def remember(
    db: Database, *, principal: Principal, thread_id: str, node_id: str
) -> ChosenPathOut:
    """Record `node_id`'s path as the chosen one (404: not a node of this family)."""
    node = NodeId.parse(node_id)
    async with db.transaction() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        root = conv.root_thread_id
        family = await Family.load(s, root, nodes=True)
        if node is None or node not in family.nodes:
            raise NotFound(f"node {node_id} is not in this conversation")
        forks = _forks(family)
        picks: dict[str, str] = {LAST: str(node)}
        for step in family.ancestors(node):
            parent = family.parent(step)
            key = str(parent) if parent is not None else BASELINE
            if key in forks:
                picks[key] = str(step)
        # The head is untouched: a chosen path is a view, not a checkout.
        await repo.upsert(s, user_id=principal.id, root_thread_id=root, picks=picks)
    return await recall(db, principal=principal, thread_id=thread_id)
