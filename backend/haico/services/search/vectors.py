"""Text-search vectors computed after the transaction that wrote their entries.

On PostgreSQL a search entry's vector (`to_tsvector` of up to 100,000 characters) is
the dearest part of indexing a large document. A merge, which must stay about as
cheap as a checkout, writes its node's document entry with the vector left null
(`search.new_node_document_write`) and has it computed here once it has
committed: search finds the merged document a moment later, never before the merge.

A vector still null when its process dies is not lost: `VectorFiller.resume`, on
start, computes every one left. The fill is one UPDATE of the rows still null, so
running it twice, or beside another process's, does nothing more. SQLite stores no
vectors (it searches the text itself), so there is nothing to fill there.
"""

from __future__ import annotations

import asyncio
import logging

from haico.db.engine import Database, fault
from haico.db.faults import Step
from haico.db.repositories import search as repo
from haico.domain import NodeId
from haico.process import background

log = logging.getLogger("haico.search")

BATCH = 50


async def fill_node(db: Database, node: NodeId) -> int:
    """Compute the vectors node `node` still lacks, in a transaction of their own."""
    if db.is_sqlite:
        return 0
    async with db.transaction() as s:
        await fault(s, Step.MERGE_VECTORS)
        return await repo.fill_vectors(s, node=(node.thread_id, node.turn))


async def fill_all(db: Database) -> int:
    """Compute every vector left null, BATCH rows per transaction; how many."""
    if db.is_sqlite:
        return 0
    total = 0
    while True:
        async with db.transaction() as s:
            filled = await repo.fill_vectors(s, limit=BATCH)
        total += filled
        if filled < BATCH:
            return total


class VectorFiller:
    """This process's vector fills: one background task per node, tracked so that
    tests can wait for them and a shutdown cancels them (what a cancel leaves,
    `resume` fills at the next start)."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self._tasks: set[asyncio.Task[None]] = set()

    def kick(self, node: NodeId) -> None:
        """Node `node`'s entries were written without vectors: fill them soon."""
        task = asyncio.create_task(self._fill(node), name=f"vectors {node}")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _fill(self, node: NodeId) -> None:
        try:
            await fill_node(self.db, node)
        except Exception:
            log.exception("could not compute the search vectors of %s; the next start will", node)

    async def resume(self) -> int:
        """Fill what a process that died left (see the module doc); a failure is
        logged and leaves them for the next start."""
        try:
            return await fill_all(self.db)
        except Exception:
            log.exception("could not compute the search vectors left pending")
            return 0

    async def idle(self) -> None:
        """Wait until no fill is running (tests and benchmarks)."""
        while self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)

    async def close(self) -> None:
        await background.cancel_all(list(self._tasks))
        self._tasks.clear()
