"""The aligned comparison of two paths: their lineages from the shared node down,
paired step by step, each pair with its Comparison, both replies and what each
step used (from the ledger), and a total per side.

Step i of a side is the i-th node after the fork on that side's lineage; a side
that ends first leaves null on its half of the remaining pairs (and no comparison).
"""

from __future__ import annotations

from itertools import zip_longest
from typing import Literal

from haico.db.engine import Database
from haico.domain import NodeId
from haico.schemas.whatif import PathPair, PathsCompared, PathStep, PathTotals, SideTotals
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.compare import nodes as compare_service
from haico.services.compare.nodes import common_ancestor, node_path, parse_node
from haico.services.families.conversations import get_for
from haico.services.ledger import provenance as ledger


async def _step(db: Database, principal: Principal, node: NodeId | None) -> PathStep | None:
    if node is None:
        return None
    got = await ledger.get_node(db, principal=principal, thread_id=node.thread_id, turn=node.turn)
    return PathStep(
        node_id=got.node_id,
        user_message=got.user_message,
        reply=got.reply,
        state=got.state,
        provenance=got.provenance,
    )


def _totals(steps: list[PathStep]) -> PathTotals:
    costs = [s.provenance.cost_usd for s in steps]
    return PathTotals(
        steps=len(steps),
        input_tokens=sum(s.provenance.input_tokens or 0 for s in steps),
        output_tokens=sum(s.provenance.output_tokens or 0 for s in steps),
        duration_ms=sum(s.provenance.duration_ms or 0 for s in steps),
        cost_usd=sum(c for c in costs if c is not None)
        if any(c is not None for c in costs)
        else None,
        tokens_estimated=any(s.provenance.tokens_estimated for s in steps),
    )


async def compare_paths(
    db: Database, *, principal: Principal, thread_id: str, a: str, b: str
) -> PathsCompared:
    """`GET …/compare-paths?a=&b=`: both nodes must be the caller's (403/404)."""
    node_a, node_b = parse_node(a, name="a"), parse_node(b, name="b")
    async with db.read() as s:
        await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        _, end_a = await ledger.resolve_node(
            s, principal=principal, thread_id=node_a.thread_id, turn=node_a.turn
        )
        _, end_b = await ledger.resolve_node(
            s, principal=principal, thread_id=node_b.thread_id, turn=node_b.turn
        )
        path_a, path_b = await node_path(s, end_a), await node_path(s, end_b)
    fork = common_ancestor(path_a, path_b)
    since = path_a.index(fork) + 1 if fork is not None else 0
    pairs: list[PathPair] = []
    sides: dict[Literal["a", "b"], list[PathStep]] = {"a": [], "b": []}
    for x, y in zip_longest(path_a[since:], path_b[since:]):
        step_a, step_b = await _step(db, principal, x), await _step(db, principal, y)
        comparison = None
        if x is not None and y is not None:
            comparison = await compare_service.compare(
                db, principal=principal, thread_id=thread_id, a=str(x), b=str(y)
            )
        for side, step in (("a", step_a), ("b", step_b)):
            if step is not None:
                sides[side].append(step)  # type: ignore[index]
        pairs.append(
            PathPair(
                a=str(x) if x else None,
                b=str(y) if y else None,
                comparison=comparison,
                a_step=step_a,
                b_step=step_b,
            )
        )
    return PathsCompared(
        fork=str(fork) if fork else None,
        pairs=pairs,
        totals=SideTotals(a=_totals(sides["a"]), b=_totals(sides["b"])),
    )
