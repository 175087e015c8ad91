"""Replay: a path re-sent with another model profile, as a durable job.

`POST …/replay {from_node, to_node, profile_id, repeats}` checks everything up front
(the nodes are the caller's and in this family, `to_node` descends from `from_node`,
the profile is usable) and answers 202 with the job. The user's job slots
(`HAICO_REPLAY_JOBS_PER_USER`) are counted in the transaction that adds the job,
under the user's row lock, so two simultaneous requests cannot both take the last
one (the second answers 429). Then,
for each repeat, the job branches at `from_node`'s parent (the branch's reason names
the replay and its profile is the replay's) and re-sends the path's user messages in
order, one turn at a time, through the same service as a send (`TurnManager`): the
family's one-active-turn rule and the checkout guard hold, and when the family is
busy (a turn running, a restored view with unsaved changes) the job waits its turn.
Progress goes to the job's row and, as `haico/jobProgress`, to the family's event
stream (`_Progress`). Jobs and their failure on restart: `services.turns.jobs`.

Failure: each write is its own transaction, and a job that fails keeps what it
built. A branch is listed in `thread_ids` as soon as it exists, before its profile is
set and its first step sent. A failure after that (setting the profile, a step that
ends other than `complete`, the database) ends the job `failed` with the error. The
branch and its finished steps stay, and a step that was running stays as the node
it became. A branch whose creation fails leaves nothing (`branching` removes what it
made).
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any, Protocol

from haico.agent.profiles import DEFAULT_PROFILE, RunProfile
from haico.agent.runtime import AgentRuntime
from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import Job
from haico.db.repositories import whatif as repo
from haico.domain import NodeState, now
from haico.errors import (
    CheckoutWouldDiscardChanges,
    Conflict,
    Forbidden,
    InvalidInput,
    NotFound,
    TooManyJobs,
    TurnInProgress,
)
from haico.events import log as action_log
from haico.schemas.whatif import JobOut, ReplayIn
from haico.services.access.principal import Feature, Principal, require
from haico.services.access.rule import Role
from haico.services.compare.nodes import node_path, parse_node
from haico.services.families.conversations import family_of_item, get_for
from haico.services.families.model import Lineage
from haico.services.history import branching
from haico.services.ledger.provenance import resolve_node
from haico.services.profiles import service as profiles
from haico.services.turns.jobs import job_out, progress_action, save
from haico.services.turns.manager import TurnManager


class Handles(Protocol):
    """What a replay needs of the serving process (`wiring.Handles` has it)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def db(self) -> Database: ...
    @property
    def runtime(self) -> AgentRuntime: ...
    @property
    def turns(self) -> TurnManager: ...


# How often a job waiting for its family to be free tries again.
WAIT_SECONDS = 0.2
# The longest a finished step waits before the job records its progress.
PROGRESS_EVERY = 0.25


async def start(
    handles: Handles, *, principal: Principal, thread_id: str, body: ReplayIn
) -> JobOut:
    """Validate the replay (422/403/404/429 before anything is built) and launch it."""
    require(principal, Feature.WHATIF)
    db, settings = handles.db, handles.settings
    start_node, end_node = (
        parse_node(body.from_node, name="from_node"),
        parse_node(body.to_node, name="to_node"),
    )
    async with db.read() as s:
        # A replay writes to the family: an editor's at least.
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.EDITOR)
        root = conv.root_thread_id
        owner_from, first = await resolve_node(
            s, principal=principal, thread_id=start_node.thread_id, turn=start_node.turn
        )
        owner_to, last = await resolve_node(
            s, principal=principal, thread_id=end_node.thread_id, turn=end_node.turn
        )
        if owner_from.root_thread_id != root or owner_to.root_thread_id != root:
            raise InvalidInput("from_node and to_node must be nodes of this conversation")
        path = await node_path(s, last)
        if first not in path:
            raise InvalidInput(f"to_node {last} does not descend from from_node {first}")
        lineage = await Lineage.load(s, first.thread_id)
        parent_turn = first.turn - 1
        branch_thread = lineage.owner_of(parent_turn) if parent_turn >= 1 else root
        profile = await profiles.usable(
            s, settings, principal=principal, profile_id=body.profile_id
        )
    turns = {n.turn for n in path[path.index(first) :]}
    transcript = await handles.runtime.messages(last.thread_id)
    messages = [
        m.content for m in transcript if m.role == "user" and m.turn_index in turns and m.content
    ]
    if not messages:
        raise InvalidInput("the range holds no user message to replay")
    if len(messages) > settings.replay_max_steps:
        raise InvalidInput(
            f"the range holds {len(messages)} messages; a replay re-sends at most "
            f"{settings.replay_max_steps}"
        )
    spec: dict[str, Any] = {
        "thread_id": thread_id,
        "from_node": str(first),
        "to_node": str(last),
        "profile_id": body.profile_id,
        "profile_name": profile.name,
        "repeats": body.repeats,
        "branch_thread": branch_thread,
        "branch_turn": parent_turn,
        "messages": messages,
    }
    job = Job(
        id=f"job_{uuid.uuid4().hex[:24]}",
        user_id=principal.id,
        root_thread_id=root,
        kind="replay",
        state="queued",
        spec=spec,
        done=0,
        total=len(messages) * body.repeats,
        thread_ids=[],
        process_id=handles.turns.process_id,
        heartbeat_at=now(),
        created_at=now(),
        updated_at=now(),
    )
    async with db.transaction() as s:
        # The user's job slots are counted and taken in one transaction, under the
        # user's row lock: two simultaneous replays cannot both take the last slot.
        await repo.lock_user(s, principal.id)
        if await repo.active_jobs_of(s, principal.id) >= settings.replay_jobs_per_user:
            raise TooManyJobs(
                f"you already have {settings.replay_jobs_per_user} replay jobs running; "
                "wait for one to finish or cancel it"
            )
        s.add(job)
        await s.flush()
        await action_log.append_many(
            s,
            root_thread_id=root,
            channel=action_log.session_channel(root),
            actions=[progress_action(job)],
        )
    out = job_out(job)

    async def work(job_id: str) -> None:
        await _replay(handles, job_id, principal=principal, spec=spec)

    handles.turns.jobs.launch(job.id, work)
    return out


def reason_of(spec: dict[str, Any], repeat: int) -> str:
    """The branch's reason: "replay with NAME of turns A–B (i/n)" (short: the graph
    shows it on the branch's edge)."""
    first, last = (str(spec[k]).rsplit(":", 1)[1] for k in ("from_node", "to_node"))
    turns = f"turn {first}" if first == last else f"turns {first}–{last}"
    of = f" ({repeat}/{spec['repeats']})" if spec["repeats"] > 1 else ""
    return f"replay with {spec['profile_name']} of {turns}{of}"


class _Progress:
    """The job's progress, recorded (and streamed) at most PROGRESS_EVERY apart while
    steps finish: a fast model's steps take ~30 ms, and each record is a transaction
    with an action. A step that finishes is recorded within PROGRESS_EVERY, and the
    last one of each branch at once (`flush`)."""

    def __init__(self, db: Database, job_id: str) -> None:
        self.db, self.job_id = db, job_id
        self.done = self.saved = 0
        self._task: asyncio.Task[None] | None = None

    def step(self) -> None:
        self.done += 1
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._later())

    async def _later(self) -> None:
        await asyncio.sleep(PROGRESS_EVERY)
        await self.flush()

    async def flush(self) -> None:
        if self.done != self.saved:
            self.saved = self.done
            await save(self.db, self.job_id, done=self.done)

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()


async def _replay(
    handles: Handles, job_id: str, *, principal: Principal, spec: dict[str, Any]
) -> None:
    built: list[str] = []
    profile_id = spec["profile_id"]
    # Checked again once per job (it may have been deleted meanwhile), not per step.
    profile = await profiles.resolve(
        handles.db, handles.settings, principal=principal, profile_id=profile_id
    )
    progress = _Progress(handles.db, job_id)
    try:
        for repeat in range(1, spec["repeats"] + 1):
            branch = await branching.create_branch(
                handles.db,
                handles.runtime,
                principal=principal,
                thread_id=spec["branch_thread"],
                from_turn=spec["branch_turn"],
                reason=reason_of(spec, repeat),
                replay=True,
            )
            built.append(branch.thread_id)
            # Recorded first: whatever fails after this, the job lists the branch.
            await save(handles.db, job_id, thread_ids=list(built))
            if profile_id != DEFAULT_PROFILE:
                await profiles.set_branch_profile(
                    handles.db,
                    handles.settings,
                    principal=principal,
                    thread_id=branch.thread_id,
                    profile_id=profile_id,
                )
            for content in spec["messages"]:
                await _step(
                    handles,
                    principal=principal,
                    thread_id=branch.thread_id,
                    content=content,
                    profile=profile,
                )
                progress.step()
            await progress.flush()
    finally:
        progress.stop()
        # What was done is recorded even when the job stops (cancelled, failed).
        await asyncio.shield(progress.flush())


async def _step(
    handles: Handles, *, principal: Principal, thread_id: str, content: str, profile: RunProfile
) -> None:
    """Send one message on the replay's branch and wait for its turn to end; while the
    family is busy, wait and try again."""
    while True:
        try:
            turn = await handles.turns.start_turn(
                principal=principal, thread_id=thread_id, content=content, profile=profile
            )
            break
        except (TurnInProgress, CheckoutWouldDiscardChanges, Conflict):
            await asyncio.sleep(WAIT_SECONDS)
    assert turn.task is not None
    try:
        await asyncio.shield(turn.task)
    except asyncio.CancelledError:
        # The job was cancelled: so is its running turn (it stays, as a cancelled node).
        turn.task.cancel()
        await asyncio.gather(turn.task, return_exceptions=True)
        raise
    if turn.state != NodeState.COMPLETE:
        raise RuntimeError(f"step {turn.node_id} ended {turn.state}; the replay stopped there")


NO_JOB = "no such job"


async def _owned_job(db: Database, *, principal: Principal, job_id: str) -> Job:
    """The caller's own job, while the caller may still read its family. A job of a
    family the caller cannot read (or one that is gone) is 404 naming nothing, as an
    unknown id is; another user's job in a family the caller reads is 403."""
    async with db.read() as s:
        job = await repo.get_job(s, job_id)
        if job is None:
            raise NotFound(NO_JOB)
        await family_of_item(
            s,
            thread_id=job.root_thread_id,
            principal=principal,
            need=Role.VIEWER,
            missing=NO_JOB,
        )
        if job.user_id != principal.id:
            raise Forbidden("this job is another user's")
    return job


async def get_job(db: Database, *, principal: Principal, job_id: str) -> JobOut:
    return job_out(await _owned_job(db, principal=principal, job_id=job_id))


async def family_jobs(db: Database, *, principal: Principal, thread_id: str) -> list[JobOut]:
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        return [job_out(j) for j in await repo.jobs_of_family(s, conv.root_thread_id, principal.id)]


async def cancel(handles: Handles, *, principal: Principal, job_id: str) -> JobOut:
    """Cancel the job wherever it runs (its running turn too); an ended job is
    answered as it is. What it built stays."""
    job = await _owned_job(handles.db, principal=principal, job_id=job_id)
    if job.state in ("done", "failed", "cancelled"):
        return job_out(job)
    await save(handles.db, job_id, cancel_requested=True)
    await handles.turns.jobs.cancel_local(job_id)
    # Run by another process (its next heartbeat stops it), or already stopped here.
    await save(handles.db, job_id, state="cancelled")
    return job_out(await _owned_job(handles.db, principal=principal, job_id=job_id))
