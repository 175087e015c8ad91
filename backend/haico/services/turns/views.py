"""What the AHP host shows of a family: turn nodes with their logged actions, the
selected path, pages of a node's children, sessions and their chats.

Read-only. Every read that answers a snapshot holds appends off (`hold_appends`), so
the state read and the log's newest `serverSeq` describe the same moment. Turns are
returned as records plus the actions the log still holds for them; the AHP face
reduces those actions into wire `Turn` objects (the log keeps a window: a turn whose
actions are gone is shown from its record alone).

One piece on purpose: every read here answers an AHP snapshot under the same
`hold_appends` rule and shares the helpers that turn rows into records.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.runtime import AgentRuntime, TranscriptMessage
from haico.db.engine import Database
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import ledger as ledger_repo
from haico.db.repositories import threads as repo
from haico.db.repositories import turn_views as views_repo
from haico.db.repositories.turn_views import TurnRow
from haico.domain import BranchStatus, NodeId, NodeState, aware
from haico.events import actions as action_shapes
from haico.events import log as action_log
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.families.conversations import get_for
from haico.services.families.model import Family
from haico.services.history import heads
from haico.services.history.seeding import transcript_prefix


@dataclass
class TurnRecord:
    id: str
    parent_id: str | None
    order: int
    state: NodeState
    user_message: str
    reply: str
    started_at: datetime
    completed_at: datetime | None
    # AHP `UsageInfo` from the node's provenance (the research ledger), if any.
    usage: dict[str, Any] | None = None
    merged_from: str | None = None  # a merge node's source (a revert's: what it undid)
    author: str | None = None  # a grantee who made the node
    kind: str = "turn"  # `NodeKind`


@dataclass
class ActiveRecord:
    id: str
    parent_id: str | None
    user_message: str
    started_at: datetime


@dataclass
class TurnsPage:
    """Turn records (oldest first) with the logged actions of each, keyed by turn id."""

    turns: list[TurnRecord]
    actions: dict[str, list[dict[str, Any]]]
    more: bool = False


@dataclass
class ChatMaterial:
    root_thread_id: str
    title: str
    created_at: datetime
    updated_at: datetime
    head_turn_id: str | None
    path: TurnsPage
    active: ActiveRecord | None
    active_actions: list[dict[str, Any]]
    forked_from: str | None  # the node a forked family started from
    forked_from_root: str | None
    server_seq: int


@dataclass
class ChatRecord:
    root_thread_id: str
    title: str
    updated_at: datetime
    forked_from: str | None = None
    forked_from_root: str | None = None
    running: bool = False


@dataclass
class SessionRecord:
    root_thread_id: str
    title: str
    created_at: datetime
    updated_at: datetime
    chats: list[ChatRecord] = field(default_factory=list)


# ---- helpers ----


def _visible(family: Family, thread_id: str) -> bool:
    row = family.threads.get(thread_id)
    if row is None:
        return False
    return row.parent_thread_id is None or row.status == BranchStatus.ACTIVE


async def _family(s: AsyncSession, root_thread_id: str) -> Family:
    return await Family.load(s, root_thread_id, nodes=True)


def _records(family: Family, rows: Iterable[TurnRow]) -> list[TurnRecord]:
    out = []
    for r in rows:
        node = NodeId(r.thread_id, r.turn_index)
        parent = family.parent(node)
        out.append(
            TurnRecord(
                id=str(node),
                parent_id=str(parent) if parent is not None else None,
                order=r.order,
                state=r.state,
                user_message=r.user_message,
                reply=r.reply,
                started_at=aware(r.captured_at),
                completed_at=aware(r.completed_at) if r.completed_at else None,
                merged_from=r.merged_from,
                author=r.author,
                kind=r.kind,
            )
        )
    return out


# A turn's actions are logged after it started; entries this much older than the
# oldest turn asked for cannot be its (the margin absorbs clock and commit delays).
_LOG_MARGIN = timedelta(minutes=5)
_LOG_PAGE = 500


async def _turn_actions(
    s: AsyncSession, root_thread_id: str, turn_ids: Collection[str], since: datetime | None
) -> dict[str, list[dict[str, Any]]]:
    """The logged chat actions of these turns, in log order.

    The family's log is read backwards from the newest entry and only as far as the
    turns asked for reach: until each one's `chat/turnStarted` was seen, or the
    entries predate the oldest of them (`since`, its start). A snapshot thus costs
    the actions of its window, not the family's whole log.
    """
    wanted = set(turn_ids)
    out: dict[str, list[dict[str, Any]]] = {}
    if not wanted:
        return out
    channel = action_log.chat_channel(root_thread_id)
    cutoff = since - _LOG_MARGIN if since is not None else None
    started: set[str] = set()
    newest_first: list[dict[str, Any]] = []
    before: int | None = None
    while True:
        page = await action_log.read_before(
            s, before=before, root_thread_id=root_thread_id, limit=_LOG_PAGE
        )
        for entry in page:
            before = entry.seq
            turn_id = entry.action.get("turnId")
            if entry.channel == channel and turn_id in wanted:
                newest_first.append(entry.action)
                if entry.action.get("type") == "chat/turnStarted":
                    started.add(str(turn_id))
        if len(page) < _LOG_PAGE or started >= wanted:
            break
        if cutoff is not None and aware(page[-1].created_at) < cutoff:
            break
    for action in reversed(newest_first):
        out.setdefault(str(action.get("turnId")), []).append(action)
    return out


async def _page(s: AsyncSession, family: Family, nodes: list[NodeId], *, more: bool) -> TurnsPage:
    rows = await views_repo.turn_rows(s, [(n.thread_id, n.turn) for n in nodes])
    by_id = {NodeId(r.thread_id, r.turn_index): r for r in rows}
    records = _records(family, [by_id[n] for n in nodes if n in by_id])
    await _with_usage(s, records)
    actions = await _turn_actions(
        s, family.root_thread_id, [r.id for r in records], _oldest(records)
    )
    return TurnsPage(records, actions, more)


async def _with_usage(s: AsyncSession, records: list[TurnRecord]) -> None:
    """Give each record its usage, so a turn whose actions left the log keeps it."""
    nodes = {(n.thread_id, n.turn): r for r in records if (n := NodeId.parse(r.id))}
    found = await ledger_repo.provenance_at(s, list(nodes))
    for key, prov in found.items():
        values = {f: getattr(prov, f) for f in ledger_repo.PROVENANCE_FIELDS}
        usage = action_shapes.usage(nodes[key].id, values)
        nodes[key].usage = usage["usage"] if usage else None


def _oldest(records: list[TurnRecord]) -> datetime | None:
    return min((r.started_at for r in records), default=None)


def _path(family: Family, head_turn_id: str | None) -> list[NodeId]:
    head = NodeId.parse(head_turn_id) if head_turn_id else None
    return list(reversed(family.ancestors(head)))  # oldest first


# ---- reads ----


async def chat_material(
    db: Database, *, principal: Principal, root_thread_id: str, limit: int
) -> ChatMaterial:
    """A chat snapshot: the last `limit` turns of the selected path, the head, the
    active turn, and the log position it stands at."""
    async with db.read(held=True) as s:
        await action_log.hold_appends(s)
        conv, _ = await get_for(s, principal, thread_id=root_thread_id, need=Role.VIEWER)
        if conv.root_thread_id != conv.thread_id:
            raise_not_chat(root_thread_id)
        head = await heads.read_head(s, root_thread_id)
        family = await _family(s, root_thread_id)
        path = _path(family, head.head_turn_id)
        page = await _page(s, family, path[-limit:], more=len(path) > limit)
        active_row = await heads_repo.get_active_turn(s, root_thread_id)
        active = None
        active_actions: list[dict[str, Any]] = []
        if active_row is not None:
            active_id = NodeId.format(active_row.thread_id, active_row.turn_index)
            active = ActiveRecord(
                id=active_id,
                parent_id=active_row.parent_turn_id,
                user_message=active_row.user_message,
                started_at=aware(active_row.started_at),
            )
            active_actions = (
                await _turn_actions(s, root_thread_id, [active_id], active.started_at)
            ).get(active_id, [])
        forked_root = None
        forked = None
        if conv.forked_from_thread_id:
            forked = NodeId.format(conv.forked_from_thread_id, conv.forked_from_turn or 0)
            source = await repo.get_thread(s, conv.forked_from_thread_id)
            forked_root = source.root_thread_id if source is not None else None
        seq = (await action_log.bounds(s))[1]
        return ChatMaterial(
            root_thread_id=root_thread_id,
            title=conv.title,
            created_at=aware(conv.created_at),
            updated_at=aware(conv.updated_at),
            head_turn_id=head.head_turn_id,
            path=page,
            active=active,
            active_actions=active_actions,
            forked_from=forked,
            forked_from_root=forked_root,
            server_seq=seq,
        )


def raise_not_chat(root_thread_id: str) -> None:
    from haico.errors import NotFound

    raise NotFound(f"no chat {root_thread_id}")


async def older_on_path(
    db: Database, *, principal: Principal, root_thread_id: str, before: str, limit: int
) -> TurnsPage:
    """Up to `limit` turns of the selected path just before node `before`."""
    async with db.read() as s:
        await get_for(s, principal, thread_id=root_thread_id, need=Role.VIEWER)
        family = await _family(s, root_thread_id)
        node = NodeId.parse(before)
        older = list(reversed(family.ancestors(node)))[:-1] if node else []
        return await _page(s, family, older[-limit:], more=len(older) > limit)


async def children(
    db: Database,
    *,
    principal: Principal,
    root_thread_id: str,
    parent_turn_id: str | None,
    after_order: int,
    limit: int,
) -> tuple[TurnsPage, int | None]:
    """A page of the retained direct children of a node (None: the root-level turns),
    in creation order after `after_order`; with the order to continue after, if more."""
    async with db.read() as s:
        await get_for(s, principal, thread_id=root_thread_id, need=Role.VIEWER)
        family = await _family(s, root_thread_id)
        parent = NodeId.parse(parent_turn_id) if parent_turn_id else None
        kids = [
            n
            for n in family.nodes
            if _visible(family, n.thread_id)
            and (family.parent(n) == parent)
            and n.turn >= family.first_owned(n.thread_id)
        ]
        rows = await views_repo.turn_rows(s, [(n.thread_id, n.turn) for n in kids])
        rows = [r for r in rows if r.order > after_order and r.state != NodeState.RUNNING]
        page_rows = rows[:limit]
        records = _records(family, page_rows)
        await _with_usage(s, records)
        actions = await _turn_actions(s, root_thread_id, [r.id for r in records], _oldest(records))
        more = len(rows) > limit
        return TurnsPage(records, actions, more), (page_rows[-1].order if more else None)


async def turns_by_id(db: Database, *, root_thread_id: str, turn_ids: list[str]) -> TurnsPage:
    """The records of these nodes of a family (for a logged `chat/turnsLoaded`)."""
    async with db.read() as s:
        family = await _family(s, root_thread_id)
        nodes = [n for n in (NodeId.parse(t) for t in turn_ids) if n is not None]
        return await _page(s, family, nodes, more=False)


async def owner_of_family(db: Database, root_thread_id: str) -> int | None:
    async with db.read() as s:
        conv = await repo.get_thread(s, root_thread_id)
        return conv.user_id if conv is not None else None


async def sessions(db: Database, *, principal: Principal) -> list[SessionRecord]:
    """The caller's families (each a session) with their chats: the family's own and
    the families forked from it."""
    access.permit(principal, Deed.LIST)
    return await _sessions_of(db, principal.id)


async def _sessions_of(db: Database, user_id: int) -> list[SessionRecord]:
    async with db.read() as s:
        rows = await repo.list_visible_for_user(s, user_id)
        roots = [c for c, _ in rows if c.thread_id == c.root_thread_id]
        by_thread_root = {c.thread_id: c.root_thread_id for c, _ in rows}
        running = {a.root_thread_id for a in await heads_repo.all_active_turns(s)}
    out: dict[str, SessionRecord] = {}
    for c in roots:
        out[c.thread_id] = SessionRecord(
            root_thread_id=c.thread_id,
            title=c.title,
            created_at=aware(c.created_at),
            updated_at=aware(c.updated_at),
            chats=[
                ChatRecord(
                    c.thread_id,
                    c.title,
                    aware(c.updated_at),
                    running=c.thread_id in running,
                )
            ],
        )
    for c in roots:
        if c.forked_from_thread_id is None:
            continue
        source_root = by_thread_root.get(c.forked_from_thread_id)
        forked = NodeId.format(c.forked_from_thread_id, c.forked_from_turn or 0)
        if source_root in out:
            out[source_root].chats.append(
                ChatRecord(
                    c.thread_id,
                    c.title,
                    aware(c.updated_at),
                    forked_from=forked,
                    forked_from_root=source_root,
                    running=c.thread_id in running,
                )
            )
    return sorted(out.values(), key=lambda r: r.updated_at, reverse=True)


async def session(db: Database, *, principal: Principal, root_thread_id: str) -> SessionRecord:
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=root_thread_id, need=Role.VIEWER)
        if conv.root_thread_id != conv.thread_id:
            raise_not_chat(root_thread_id)
    # The session as its owner has it; a grantee sees the family's own chat only (the
    # owner's forks are families of their own, not shared).
    for record in await _sessions_of(db, conv.user_id):
        if record.root_thread_id == root_thread_id:
            if conv.user_id != principal.id:
                record.chats = [c for c in record.chats if c.forked_from_root is None]
            return record
    raise_not_chat(root_thread_id)
    raise AssertionError  # unreachable


async def transcript(
    db: Database, runtime: AgentRuntime, *, principal: Principal, thread_id: str
) -> list[TranscriptMessage]:
    """The thread's messages (`GET …/messages`); a draft shows its parent's prefix."""
    async with db.read() as s:
        _, branch = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
    if branch is not None and branch.status == BranchStatus.DRAFT:
        # A draft has no transcript of its own yet.
        parent = await runtime.raw_messages(branch.parent_thread_id)
        return runtime.to_transcript(transcript_prefix(parent, branch.branch_point_turn))
    return await runtime.messages(thread_id)
