"""The research ledger: each node's provenance and the authorship of its changes.

Provenance is measured while a turn runs (`agent.meter.Meter`) and written with the
turn's close, in the same transaction (`provenance_write`): a failed or cancelled
turn keeps what it measured. Edits are written by every live workspace change
(`live_edit.changed`), at the thread's turn clock: a turn's tool calls and, by the
snapshot rule, the hand edits after it belong to that node. Nothing here is read by
a prompt builder or written into a transcript.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.meter import Meter
from haico.agent.profiles import RunProfile, default_profile
from haico.agent.state import CHARS_PER_TOKEN
from haico.config import Settings
from haico.db.dialect import Write
from haico.db.engine import Database
from haico.db.models import Conversation, NodeProvenance, WorkspaceEdit
from haico.db.repositories import ledger as repo
from haico.db.repositories import snapshots as snap_repo
from haico.db.repositories import threads as threads_repo
from haico.domain import NodeId, aware
from haico.domain import NodeKind as DomainNodeKind
from haico.errors import InvalidTurn, NotFound
from haico.schemas.compare import EditOrigin
from haico.schemas.ledger import BranchUsage, NodeEdit, NodeKind, NodeOut, NoteOut, Provenance
from haico.services.access.principal import Principal
from haico.services.access.rule import Role
from haico.services.families.conversations import check_visible, get_for
from haico.services.families.model import Family, Lineage


def cost_of(
    table: dict[str, dict[str, float]], models: list[str], input_tokens: int, output_tokens: int
) -> float | None:
    """USD for these tokens at the first of `models` the price table lists, else None."""
    for model in models:
        price = table.get(model)
        if price is not None:
            usd = input_tokens * price.get("input", 0.0) + output_tokens * price.get("output", 0.0)
            return round(usd / 1_000_000, 8)
    return None


def provenance_values(
    settings: Settings, meter: Meter, *, duration_ms: int, profile: RunProfile | None = None
) -> dict[str, Any]:
    """A finished (or interrupted) turn's provenance, from what its meter measured and
    the profile it ran with (None: the server's default)."""
    profile = profile or default_profile(settings)
    configured = profile.model
    model = meter.model or configured
    counted = meter.counted()
    input_tokens = meter.input_tokens if counted else None
    output_tokens = meter.output_tokens if counted else None
    cost = None
    if input_tokens is not None and output_tokens is not None:
        cost = cost_of(settings.price_table, [model, configured], input_tokens, output_tokens)
    return {
        "provider": profile.provider,
        "model": model,
        "profile_id": profile.id,
        "profile_name": profile.name,
        "params": profile.applied(),
        "ignored_params": profile.ignored(),
        "instructions_sha256": profile.instructions_sha256(),
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "tokens_estimated": meter.estimated,
        "first_token_ms": meter.first_token_ms(),
        "duration_ms": duration_ms,
        "tool_calls": meter.tool_calls,
        "cost_usd": cost,
    }


def lost_provenance(settings: Settings, *, partial_reply: str, tool_calls: int) -> dict[str, Any]:
    """The provenance of a turn whose serving process died before measuring its end:
    what the family's log shows of it. The provider and model are the configured ones;
    no usage report exists, so the input is unknown (null) and the output is estimated
    from the streamed text (null when nothing streamed); times and cost are unknown."""
    output = -(-len(partial_reply) // CHARS_PER_TOKEN) if partial_reply else None
    # (the turn's own profile died with its process: the server's default is named)
    profile = default_profile(settings)
    return {
        "provider": profile.provider,
        "model": profile.model,
        "profile_id": profile.id,
        "profile_name": profile.name,
        "params": {},
        "ignored_params": [],
        "instructions_sha256": profile.instructions_sha256(),
        "input_tokens": None,
        "output_tokens": output,
        "tokens_estimated": True,
        "first_token_ms": None,
        "duration_ms": None,
        "tool_calls": tool_calls,
        "cost_usd": None,
    }


def provenance_write(thread_id: str, turn_index: int, values: dict[str, Any]) -> Write:
    return repo.provenance_write(thread_id, turn_index, values)


def provenance_out(row: NodeProvenance | None) -> Provenance:
    if row is None:
        return Provenance(
            provider=None,
            model=None,
            profile_id=None,
            params={},
            instructions_sha256=None,
            input_tokens=None,
            output_tokens=None,
            tokens_estimated=False,
            first_token_ms=None,
            duration_ms=None,
            tool_calls=0,
            cost_usd=None,
        )
    return Provenance(**{f: getattr(row, f) for f in repo.PROVENANCE_FIELDS})


def edit_out(e: WorkspaceEdit) -> NodeEdit:
    return NodeEdit(
        surface=e.surface,
        uid=e.uid,
        kind=e.kind,
        origin=e.origin,
        author=e.author,
        at=aware(e.at),
    )


def edit_origin(e: WorkspaceEdit) -> EditOrigin:
    return EditOrigin(node_id=NodeId.format(e.thread_id, e.turn_index), **edit_out(e).model_dump())


async def resolve_node(
    s: AsyncSession, *, principal: Principal, thread_id: str, turn: int, need: Role = Role.VIEWER
) -> tuple[Conversation, NodeId]:
    """Node `turn` of `thread_id`'s path, and the thread that owns it (ancestors, and a
    fork's source family below its fork point, included); the caller must hold `need`
    on each."""
    conv, _ = await get_for(s, principal, thread_id=thread_id, need=need)
    if turn < 1 or turn > conv.turn_index:
        raise InvalidTurn(f"node {thread_id}:{turn} does not exist")
    seen: set[str] = set()
    # A fork's steps below its fork point are the fork's to read whoever owns their
    # source (a viewer's copy stays readable after the share ends); writing to them
    # (a note) still needs the role on the source family.
    inherited = False
    while conv.thread_id not in seen:
        seen.add(conv.thread_id)
        lineage = await Lineage.load(s, conv.thread_id)
        source = lineage.fork_source(turn)
        if source is None:
            owner_id = lineage.owner_of(turn)
            owner = await _thread(s, owner_id, principal, need, read_only=inherited)
            return owner, NodeId(owner_id, turn)
        inherited = True
        conv = await _thread(s, source, principal, need, read_only=need <= Role.VIEWER)
    raise NotFound(f"node {thread_id}:{turn} not found")


async def _thread(
    s: AsyncSession, thread_id: str, principal: Principal, need: Role, *, read_only: bool
) -> Conversation:
    """`get_for`, or for a read of a fork's inherited step the thread if it is
    visible at all (not deleted or half-built)."""
    if not (read_only and need <= Role.VIEWER):
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=need)
        return conv
    found = await threads_repo.get_thread(s, thread_id)
    if found is None:
        raise NotFound(f"conversation {thread_id} not found")
    check_visible(found, await threads_repo.get_branch(s, thread_id))
    return found


async def edit_keys(s: AsyncSession, node: NodeId) -> list[tuple[str, int]]:
    """Where the edits of `node` are recorded: at the node itself, and for a branch's
    first node also at the branch point on the branch's own thread (the edits made
    to a restored view before its first message, absorbed into the node's snapshot)."""
    keys = [(node.thread_id, node.turn)]
    branch = await threads_repo.get_branch(s, node.thread_id)
    if branch is not None and node.turn == branch.branch_point_turn + 1:
        keys.append((node.thread_id, node.turn - 1))
    return keys


def ledger_kind(kind: str) -> NodeKind:
    """A node's kind as the ledger shows it: a pick is a merge node (as in the graph)."""
    return "turn" if kind == DomainNodeKind.TURN else "merge"


def note_out(n: Any, principal: Principal) -> NoteOut:
    """A note as `principal` sees it (`mine`: that user wrote it)."""
    return NoteOut(
        id=n.id,
        node_id=NodeId.format(n.thread_id, n.turn_index),
        text=n.text,
        codes=list(n.codes or []),
        author=n.author,
        created_at=aware(n.created_at),
        updated_at=aware(n.updated_at),
        mine=n.user_id == principal.id,
        imported_author=n.imported_author,
    )


async def get_node(db: Database, *, principal: Principal, thread_id: str, turn: int) -> NodeOut:
    """Node `turn` of the thread's path with its provenance, edits and notes."""
    async with db.read() as s:
        _, node = await resolve_node(s, principal=principal, thread_id=thread_id, turn=turn)
        snap = await snap_repo.get_snapshot(s, node.thread_id, node.turn, light=True)
        if snap is None:
            raise NotFound(f"node {node} has no record (it was pruned)")
        prov = await repo.get_provenance(s, node.thread_id, node.turn)
        edits = await repo.edits_at(s, await edit_keys(s, node))
        notes = await repo.notes_at(s, node.thread_id, node.turn)
        return NodeOut(
            node_id=str(node),
            thread_id=node.thread_id,
            turn_index=node.turn,
            kind=ledger_kind(snap.kind),
            state=snap.state,
            user_message=snap.user_message,
            reply=snap.reply,
            started_at=aware(snap.captured_at),
            completed_at=aware(snap.completed_at) if snap.completed_at else None,
            provenance=provenance_out(prov),
            notes=[note_out(n, principal) for n in notes],
            edits=[edit_out(e) for e in edits],
            author=snap.author,
            imported_author=snap.imported_author,
        )


async def family_usage(db: Database, *, principal: Principal, thread_id: str) -> list[BranchUsage]:
    """Tokens and cost per branch of the thread's family (each branch's own steps)."""
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        family = await Family.load(s, conv.root_thread_id)
        shown = family.shown(conv.root_thread_id)
        usage = await repo.usage_by_thread(s, [t.thread_id for t in shown])
    out = []
    for t in shown:
        u = usage.get(t.thread_id)
        out.append(
            BranchUsage(
                thread_id=t.thread_id,
                name=t.name,
                nodes=int(u.n) if u else 0,
                input_tokens=int(u.i or 0) if u else 0,
                output_tokens=int(u.o or 0) if u else 0,
                cost_usd=float(u.c) if u and u.c is not None else None,
                tokens_estimated=bool(u.e) if u else False,
            )
        )
    return out


async def family_edits(
    db: Database, *, principal: Principal, thread_id: str, origin: str | None
) -> list[EditOrigin]:
    """Every recorded workspace change of the thread's family, oldest first."""
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        family = await Family.load(s, conv.root_thread_id)
        edits = await repo.edits_of(s, list(family.threads))
    return [edit_origin(e) for e in edits if origin is None or e.origin == origin]
