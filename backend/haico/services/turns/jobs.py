"""Background jobs: durable rows, run off the request's path by the process that took
them, with a heartbeat, cancellation from any process, and a sweep for the abandoned.

A job is a `jobs` row (`queued` → `running` → `done` | `failed` | `cancelled`) with its
progress and what it built. The process that creates one runs it in a task it owns
(`JobRunner.launch`) and renews `heartbeat_at` while it runs; each beat also picks up a
cancel requested through another process (`cancel_requested`).

A restart marks the job `failed`, keeping what it built. Resuming was the
alternative, and it is the wrong one for a replay: the step running when the process
died is left as an `error` node on the replayed branch (decision 3: failed turns are
nodes), so a resumed job would either put that failed node into the replayed path or
skip a message, and the branch would no longer be a faithful replay. A failed job
says so and the researcher starts another. The sweep runs on start and with every
heartbeat: a job whose heartbeat is older than `HAICO_TURN_STALE_SECONDS`, or whose
process on this host is gone, is marked failed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import timedelta

from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import Job
from haico.db.outage import log_failure
from haico.db.repositories import whatif as repo
from haico.domain import aware, now
from haico.events import log as action_log
from haico.process import background
from haico.schemas.whatif import JobOut, JobProgress
from haico.services.turns.sweep import is_dead_local

log = logging.getLogger("haico.jobs")

RESTARTED = "the server restarted during the job; what it built is kept"
SHUT_DOWN = "the server shut down during the job; what it built is kept"
ENDED = ("done", "failed", "cancelled")

Work = Callable[[str], Awaitable[None]]


def job_out(job: Job) -> JobOut:
    return JobOut(
        id=job.id,
        kind="replay",
        state=job.state,
        progress=JobProgress(done=job.done, total=job.total),
        thread_ids=list(job.thread_ids or []),
        error=job.error,
        thread_id=str((job.spec or {}).get("thread_id", job.root_thread_id)),
        profile_id=(job.spec or {}).get("profile_id"),
        created_at=job.created_at,
        updated_at=job.updated_at,
    )


def progress_action(job: Job) -> dict[str, object]:
    """`haico/jobProgress`: the job as `GET /api/jobs/{id}` answers it, on the family's
    session channel (schema: `events/schemas/haico-jobProgress.schema.json`)."""
    out = job_out(job)
    return {
        "type": "haico/jobProgress",
        "threadId": out.thread_id,
        "job": out.model_dump(mode="json"),
    }


async def save(db: Database, job_id: str, **values: object) -> Job | None:
    """Update the job's row and log its progress action, in one transaction. An ended
    job is never changed again (a late writer loses to a cancel or the sweep)."""
    async with db.transaction() as s:
        job = await repo.get_job(s, job_id, for_update=True)
        if job is None:
            return None
        if job.state in ENDED:
            return job
        for k, v in values.items():
            setattr(job, k, v)
        job.updated_at = now()
        await s.flush()
        await action_log.append_many(
            s,
            root_thread_id=job.root_thread_id,
            channel=action_log.session_channel(job.root_thread_id),
            actions=[progress_action(job)],
        )
        return job


class JobRunner:
    """This process's jobs: their tasks, their heartbeat, and the sweep."""

    def __init__(self, settings: Settings, db: Database, process_id: str) -> None:
        self.settings = settings
        self.db = db
        self.process_id = process_id
        self.tasks: dict[str, asyncio.Task[None]] = {}
        self._beat: asyncio.Task[None] | None = None
        self._closing = False

    async def start(self) -> None:
        await self.sweep()
        self._beat = asyncio.create_task(self._beat_forever(), name="jobs heartbeat")

    async def close(self) -> None:
        self._closing = True
        await background.stop(self._beat)
        for job_id, task in list(self.tasks.items()):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
            with contextlib.suppress(Exception):
                await save(self.db, job_id, state="failed", error=SHUT_DOWN)

    def launch(self, job_id: str, work: Work) -> None:
        """Run `work(job_id)` in a task this process owns; its end, failure or
        cancellation ends the job's row."""
        self.tasks[job_id] = asyncio.create_task(self._run(job_id, work), name=f"job {job_id}")

    async def _run(self, job_id: str, work: Work) -> None:
        try:
            await save(self.db, job_id, state="running", heartbeat_at=now())
            await work(job_id)
            await save(self.db, job_id, state="done")
        except asyncio.CancelledError:
            if not self._closing:
                with contextlib.suppress(Exception):
                    await save(self.db, job_id, state="cancelled")
        except Exception as exc:
            log.exception("job %s failed", job_id)
            with contextlib.suppress(Exception):
                await save(self.db, job_id, state="failed", error=str(exc)[:300] or "failed")
        finally:
            self.tasks.pop(job_id, None)

    async def cancel_local(self, job_id: str) -> bool:
        """Cancel the job if this process runs it; whether it did."""
        task = self.tasks.get(job_id)
        if task is None:
            return False
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await asyncio.wait_for(asyncio.shield(task), timeout=15)
        return True

    async def _beat_forever(self) -> None:
        while True:
            await asyncio.sleep(self.settings.heartbeat_seconds)
            try:
                await self.beat()
                await self.sweep()
            except Exception as exc:
                log_failure(log, "job heartbeat failed", exc)

    async def beat(self) -> None:
        """Renew this process's jobs' heartbeats; cancel those cancelled elsewhere."""
        cancelled: list[str] = []
        async with self.db.transaction() as s:
            for job_id in list(self.tasks):
                job = await repo.get_job(s, job_id)
                if job is None or job.state in ENDED or job.cancel_requested:
                    cancelled.append(job_id)
                    continue
                job.heartbeat_at = now()
                job.process_id = self.process_id
        for job_id in cancelled:
            await self.cancel_local(job_id)

    async def sweep(self) -> list[str]:
        """Mark jobs whose process is gone as failed (see the module doc)."""
        stale = now() - timedelta(seconds=self.settings.turn_stale_seconds)
        ids: list[str] = []
        async with self.db.read() as s:
            for job in await repo.abandoned_candidates(s):
                if job.id in self.tasks:
                    continue
                old = job.heartbeat_at is None or aware(job.heartbeat_at) < stale
                dead = job.process_id is not None and is_dead_local(
                    job.process_id, own=self.process_id
                )
                if old or dead:
                    ids.append(job.id)
        for job_id in ids:
            await save(self.db, job_id, state="failed", error=RESTARTED)
        return ids
