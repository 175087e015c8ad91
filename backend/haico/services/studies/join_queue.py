"""Concurrent joins of one study, made in batches: the serving process's join queue.

Each join alone is a transaction that locks the study's row, so sixty joins at once
would wait for that lock one after another, each with its dozen round trips. The
queue gathers them instead. `join` puts the caller's joiner (`joining.Joiner`, its ids
drawn now) in the line of its study, keyed by the link's token, and waits for its
answer. The first joiner to find the line idle starts the line's drainer at once (a
lone join waits for no company: it costs one task switch more than a plain join). The
drainer takes everything waiting, up to `BATCH` joiners, makes them with
`joining.join_batch` in one transaction, hands each caller its own answer (its own
`pt_…` token), then takes what arrived meanwhile, until the line is empty.

Numbering and balance are `join_batch`'s: counted under the study's lock, so they hold
across batches and across server processes.

Failure behaviour:
- Unknown link, or a closed study (read under the lock, so a close that lands while
  joiners wait stops every batch drained after it): every joiner of the batch gets
  that error (404, 403 `study_closed`).
- Any other failure of a batch: nothing of it is kept (one transaction). Its joiners
  are then made alone, one after another, with the same ids, so one bad join fails
  only its own caller, who gets its error, and the others join as if nothing happened.
- A caller that stops waiting (its request cancelled, the client gone) before its
  batch is taken, or before its retry alone, is left out. Once taken, its join is made
  with the others (like a plain join that commits after its client left) and the
  answer dropped: the batch goes on for the rest.
- `close` (the app's shutdown) lets the lines being drained finish, up to a grace
  period; a caller whose join is then still unmade gets an error. A join asked after
  `close` is made alone, without the queue.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
from collections import deque
from dataclasses import dataclass, field

from haico.db.engine import Database
from haico.errors import NotFound, StudyClosed
from haico.process import background
from haico.schemas.studies import JoinOut
from haico.services.studies import joining

log = logging.getLogger("haico")

BATCH = 100
CLOSE_GRACE_SECONDS = 10.0


@dataclass
class _Waiting:
    joiner: joining.Joiner
    answer: asyncio.Future[JoinOut]


@dataclass
class _Line:
    waiting: deque[_Waiting] = field(default_factory=deque)
    drainer: asyncio.Task[None] | None = None


class JoinQueue:
    """The lines of the studies being joined in this process (see the module doc)."""

    def __init__(self, db: Database, *, batch: int = BATCH) -> None:
        self.db = db
        self.batch = batch
        self._lines: dict[str, _Line] = {}
        self._closed = False

    async def join(self, token: str) -> JoinOut:
        """Join the study whose link carries `token` (`joining.join`'s answers and
        errors), in a batch with whoever joins it meanwhile."""
        if self._closed:
            return await joining.join(self.db, token=token)
        waiting = _Waiting(joining.Joiner.new(), asyncio.get_running_loop().create_future())
        line = self._lines.get(token)
        if line is None:
            line = self._lines[token] = _Line()
            # Its own empty context: the drainer serves every caller, not the first one.
            drain = self._drain(token, line)
            line.drainer = asyncio.create_task(drain, context=contextvars.Context())
        line.waiting.append(waiting)
        return await waiting.answer

    async def close(self) -> None:
        """Let the lines being drained finish (see the module doc)."""
        self._closed = True
        drainers = [line.drainer for line in self._lines.values() if line.drainer is not None]
        if not drainers:
            return
        _, late = await asyncio.wait(drainers, timeout=CLOSE_GRACE_SECONDS)
        for task in late:
            await background.stop(task)
        for line in list(self._lines.values()):
            _give_up(line.waiting)  # a drainer stopped before it ran

    async def _drain(self, token: str, line: _Line) -> None:
        try:
            while line.waiting:
                batch = self._take(line)
                try:
                    await self._make(token, batch)
                finally:
                    _give_up(batch)
        finally:
            del self._lines[token]
            _give_up(line.waiting)

    def _take(self, line: _Line) -> list[_Waiting]:
        """Up to `batch` joiners, in arrival order, whose callers still wait."""
        batch: list[_Waiting] = []
        while line.waiting and len(batch) < self.batch:
            waiting = line.waiting.popleft()
            if not waiting.answer.done():
                batch.append(waiting)
        return batch

    async def _make(self, token: str, batch: list[_Waiting]) -> None:
        if not batch:
            return
        joiners = [w.joiner for w in batch]
        try:
            outs = await joining.join_batch(self.db, token=token, joiners=joiners)
        except (NotFound, StudyClosed) as exc:
            for w in batch:
                _fail(w, type(exc)(exc.message, data=exc.data))
        except Exception as exc:
            if len(batch) == 1:
                _fail(batch[0], exc)
                return
            log.warning("a batch of %d joins failed (%r): each is made alone", len(batch), exc)
            for w in batch:
                if not w.answer.done():
                    await self._make(token, [w])
        else:
            for w, out in zip(batch, outs, strict=True):
                _ok(w, out)


def _ok(w: _Waiting, out: JoinOut) -> None:
    """Hand the caller its answer, unless it stopped waiting."""
    if not w.answer.done():
        w.answer.set_result(out)


def _fail(w: _Waiting, error: Exception) -> None:
    if not w.answer.done():
        w.answer.set_exception(error)


def _give_up(waiting: deque[_Waiting] | list[_Waiting]) -> None:
    """Callers whose join the drainer stopped before making (it was cancelled)."""
    for w in waiting:
        _fail(w, RuntimeError("the server stopped before this join was made"))
