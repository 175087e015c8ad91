"""The analysis export: every node of a family (or of all the caller's families) as
one CSV row, for a notebook.

RFC 4180 (a header row, CRLF line ends, fields quoted when they hold a comma, a quote
or a line break, quotes doubled), UTF-8, every text cell spreadsheet-safe
(`reports.spreadsheet`: one that would start a formula gets a leading `'`). The rows
stream: a family's threads are read a page of turn records at a time (`PAGE` turns,
keyset by turn), each page written out before the next is read, so memory stays flat
however large the family.
Per family only small things are held: its threads, its head path (node ids), its
notes, and edit counts per node.

The workspace columns describe the workspace *after* the node (the snapshot rule:
the next snapshot of the thread, or the live rows after its latest turn).
"""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator, Callable, Iterable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.engine import Database
from haico.db.models import Note
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import ledger as repo
from haico.db.repositories import threads as threads_repo
from haico.domain import NodeId, aware
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.families.conversations import get_for
from haico.services.families.model import Family
from haico.services.history import labels
from haico.services.ledger.provenance import ledger_kind
from haico.services.reports.spreadsheet import SafeWriter
from haico.services.workspace.state import live_state

COLUMNS = (
    "node_id",
    "root_thread_id",
    "thread_id",
    "parent_node_id",
    "label",
    "branch_name",
    "kind",
    "state",
    "started_at",
    "completed_at",
    "user_message",
    "reply",
    "provider",
    "model",
    "input_tokens",
    "output_tokens",
    "duration_ms",
    "first_token_ms",
    "tool_calls",
    "codes",
    "notes",
    "objective",
    "document_chars",
    "preferences",
    "todos_open",
    "todos_done",
    "rejected",
    "on_head_path",
    "tokens_estimated",
    "cost_usd",
    "edits_by_user",
    "edits_by_agent",
)
PAGE = 500
# Rows per chunk handed to the response.
CHUNK_ROWS = 200


@dataclass
class After:
    """The workspace after a node, in numbers."""

    objective: str | None = None
    document_chars: int = 0
    preferences: int = 0
    todos_open: int = 0
    todos_done: int = 0
    rejected: int = 0


# The item lists come as JSON text (both databases write `"key": value`): counting
# them by their keys costs a scan, where decoding every row was a third of the export.
# Text inside an item is escaped (`\"done\"`), so it never looks like a key.
_UID, _DONE = '"uid": ', '"done": true'


def _count(text: str | None) -> int:
    if not text or text == "[]":
        return 0
    n = text.count(_UID)
    return n if n else len(json.loads(text))  # a legacy list without uids


def _rejected_by(text: str | None, turn: int) -> int:
    if not text or text == "[]":
        return 0
    return sum(1 for x in json.loads(text) if int(x.get("rejected_after_turn", 0)) <= turn)


def _after_of_record(r: Any, turn: int) -> After:
    todos = _count(r.todos)
    done = r.todos.count(_DONE) if todos else 0
    return After(
        objective=r.objective,
        document_chars=int(r.document_chars or 0),
        preferences=_count(r.preferences),
        todos_open=todos - done,
        todos_done=done,
        rejected=_rejected_by(r.rejected, turn),
    )


async def _live_after(s: AsyncSession, thread_id: str) -> After:
    conv = await threads_repo.get_thread(s, thread_id)
    if conv is None:
        return After()
    state = await live_state(s, conv)
    done = sum(1 for t in state.todos if t.done)
    return After(
        objective=state.objective,
        document_chars=len(state.document.content) if state.document else 0,
        preferences=len(state.preferences),
        todos_open=len(state.todos) - done,
        todos_done=done,
        rejected=len(state.rejected),
    )


def _bool(value: bool) -> str:
    return "true" if value else "false"


async def check_family(db: Database, *, principal: Principal, thread_id: str) -> str:
    """The family root of a thread the caller owns (403/404 before anything streams)."""
    access.permit(principal, Deed.EXPORT)
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        return conv.root_thread_id


async def user_families(db: Database, *, principal: Principal) -> list[str]:
    access.permit(principal, Deed.CODEBOOK)
    async with db.read() as s:
        return await repo.user_roots(s, principal.id)


async def count_nodes(db: Database, roots: Iterable[str]) -> int:
    """How many rows `stream_csv` will write for these families (for a progress bar)."""
    total = 0
    async with db.read() as s:
        for root in roots:
            family = await Family.load(s, root)
            for t in family.shown(root):
                total += max(0, t.turn_index - family.first_owned(t.thread_id) + 1)
    return total


async def stream_csv(
    db: Database, roots: Iterable[str], *, progress: Callable[[int], None] | None = None
) -> AsyncIterator[str]:
    """The header, then every node of these families, in chunks of text;
    `progress(rows)` after each chunk."""
    buffer = io.StringIO()
    writer = SafeWriter(buffer)  # RFC 4180, every text cell spreadsheet-safe
    writer.writerow(COLUMNS)
    count = 0
    for root in roots:
        async for row in family_rows(db, root):
            writer.writerow(row)  # None is written as an empty field
            count += 1
            if count % CHUNK_ROWS == 0:
                if progress is not None:
                    progress(count)
                yield buffer.getvalue()
                buffer.seek(0)
                buffer.truncate()
    yield buffer.getvalue()


def _notes_by_node(notes: list[Note]) -> dict[tuple[str, int], list[Note]]:
    out: dict[tuple[str, int], list[Note]] = {}
    for n in notes:
        out.setdefault((n.thread_id, n.turn_index), []).append(n)
    return out


async def family_rows(db: Database, root: str) -> AsyncIterator[list[Any]]:
    """Every node of one family as a row of `COLUMNS`' values, read a page at a time
    (unescaped: the CSV writer makes them spreadsheet-safe, other formats take them as
    they are)."""
    async with db.read() as s:
        family = await Family.load(s, root)
        shown = family.shown(root)
        thread_ids = [t.thread_id for t in shown]
        head_row = await heads_repo.get_head(s, root)
        tip = family.tip(root)
        head = NodeId.parse(head_row.head_turn_id or "") if head_row is not None else tip
        on_head: set[NodeId] = set()
        node = head
        while node is not None and node not in on_head:
            on_head.add(node)
            node = family.parent(node)
        suffix = labels.suffixes(shown, await repo.node_times(s, labels.continuation_points(shown)))
        notes = _notes_by_node(await repo.notes_of(s, thread_ids))
        edits = await repo.edit_counts(s, thread_ids)
    for t in shown:
        first, last = family.first_owned(t.thread_id), t.turn_index
        lo = first
        while lo <= last:
            hi = min(last, lo + PAGE - 1)
            async with db.read() as s:
                records = (await s.execute(repo.node_rows_stmt(t.thread_id, lo, hi))).all()
                live = await _live_after(s, t.thread_id) if hi == last else None
            by_turn = {r.turn_index: r for r in records}
            for k in range(lo, hi + 1):
                r = by_turn.get(k)
                if r is None:
                    continue  # a turn whose record was pruned
                nxt = by_turn.get(k + 1)
                after = (
                    _after_of_record(nxt, k) if nxt is not None else (live if k == last else None)
                )
                yield _row(family, root, t, r, after, suffix, notes, edits, on_head)
            lo = hi + 1


def _row(
    family: Family,
    root: str,
    t: Any,
    r: Any,
    after: After | None,
    suffix: dict[str, list[int]],
    notes: dict[tuple[str, int], list[Note]],
    edits: dict[tuple[str, int, str], int],
    on_head: set[NodeId],
) -> list[Any]:
    node = NodeId(t.thread_id, r.turn_index)
    parent = family.parent(node)
    mine = notes.get((t.thread_id, r.turn_index), [])
    codes: list[str] = []
    for n in mine:
        codes.extend(c for c in n.codes or [] if c not in codes)
    a = after or After()
    known = after is not None
    return [
        str(node),
        root,
        t.thread_id,
        str(parent) if parent is not None else None,
        labels.label(r.turn_index, suffix.get(t.thread_id, [])),
        t.name or branch_label(family, t, suffix),
        ledger_kind(r.kind),
        r.state,
        aware(r.captured_at).isoformat(timespec="microseconds"),
        aware(r.completed_at).isoformat(timespec="microseconds") if r.completed_at else None,
        r.user_message,
        r.reply,
        r.provider,
        r.model,
        r.input_tokens,
        r.output_tokens,
        r.duration_ms,
        r.first_token_ms,
        r.tool_calls,
        ";".join(codes),
        "\n\n".join(n.text for n in mine),
        a.objective,
        a.document_chars if known else None,
        a.preferences if known else None,
        a.todos_open if known else None,
        a.todos_done if known else None,
        a.rejected if known else None,
        _bool(node in on_head),
        _bool(r.tokens_estimated) if r.provider is not None else None,
        r.cost_usd,
        _edits(edits, t.thread_id, r.turn_index, family.first_owned(t.thread_id), "user"),
        _edits(edits, t.thread_id, r.turn_index, family.first_owned(t.thread_id), "agent"),
    ]


def branch_label(family: Family, t: Any, suffix: dict[str, list[int]]) -> str:
    """How the studio names a branch that has no name: "main" for the family's root,
    else "from" and the label of the branch's first step ("from 3.1")."""
    if t.parent_thread_id is None:
        return "main"
    first = family.first_owned(t.thread_id)
    return f"from {labels.label(first, suffix.get(t.thread_id, []))}"


def _edits(
    counts: dict[tuple[str, int, str], int], thread_id: str, turn: int, first: int, origin: str
) -> int:
    """A node's edits by `origin`; a thread's first node also counts the edits made to
    its restored view before its first message (recorded at the branch point)."""
    n = counts.get((thread_id, turn, origin), 0)
    if turn == first:
        n += counts.get((thread_id, turn - 1, origin), 0)
    return n
