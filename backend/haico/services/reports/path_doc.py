"""A path as a document: one node's lineage, written out for reading and printing.

The document holds the node's path and nothing else (never a step of another
branch): the final workspace, then each step from the first (its label, the user's
message, the reply, what changed, what was rejected, and with `notes` the
researcher's notes). Markdown, or HTML that prints cleanly (the browser's "Save as
PDF").

Every step's "before" is its own snapshot (the workspace at its start) and its
"after" the next step's snapshot, or for the last step the workspace as of it
(`resolve_restore_state`): the snapshot rule, read in bulk, one query per thread of
the path, so a long path costs a handful of queries. What the document looks like on
the page (Markdown, HTML) is `path_render`'s.
"""

from __future__ import annotations

import difflib
import json
from dataclasses import dataclass
from typing import Any, Literal

from haico.db.engine import Database
from haico.db.models import Note
from haico.db.repositories import ledger as repo
from haico.db.repositories import threads as threads_repo
from haico.domain import NodeId, aware
from haico.errors import InvalidTurn
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.compare.nodes import node_path, parse_node
from haico.services.families.conversations import get_for
from haico.services.families.model import Family
from haico.services.history import labels
from haico.services.reports.path_render import PathDoc, Step, render_html, render_markdown
from haico.services.workspace.snapshots import resolve_restore_state
from haico.services.workspace.state import WorkspaceState

Format = Literal["md", "html"]


@dataclass(frozen=True)
class Facts:
    """A workspace as a step's diff needs it: the item lists as their JSON text, so
    two steps whose lists did not change are told apart without decoding them."""

    objective: str | None
    title: str | None  # None with `body` None: no document
    body: str | None
    preferences: str
    todos: str
    rejected: str


class Items:
    """JSON item lists decoded once each (many steps share the same text)."""

    def __init__(self) -> None:
        self._decoded: dict[str, list[dict[str, Any]]] = {}

    def __call__(self, text: str) -> list[dict[str, Any]]:
        found = self._decoded.get(text)
        if found is None:
            value = json.loads(text) if text else []
            found = self._decoded[text] = value if isinstance(value, list) else []
        return found


def _facts(record: Any, bodies: dict[str, str]) -> Facts:
    body = bodies.get(record.document_hash) if record.document_hash else None
    has_doc = record.document_title is not None or body is not None
    return Facts(
        objective=record.objective,
        title=(record.document_title or "") if has_doc else None,
        body=(body or "") if has_doc else None,
        preferences=record.preferences or "[]",
        todos=record.todos or "[]",
        rejected=record.rejected or "[]",
    )


def facts_of(state: WorkspaceState) -> Facts:
    columns = state.item_columns()
    doc = state.document
    return Facts(
        objective=state.objective,
        title=doc.title if doc else None,
        body=doc.content if doc else None,
        preferences=json.dumps(columns["preferences"]),
        todos=json.dumps(columns["todos"]),
        rejected=json.dumps(columns["rejected"]),
    )


def _quote(text: str, limit: int = 120) -> str:
    flat = " ".join(text.split())
    return f"“{flat[:limit]}{'…' if len(flat) > limit else ''}”"


def _by_uid(items: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {str(x.get("uid")): x for x in items}


def changes(before: Facts, after: Facts, items: Items) -> list[str]:
    """What a step changed, in words."""
    out: list[str] = []
    if before.objective != after.objective:
        out.append(
            f"objective set to {_quote(after.objective)}"
            if after.objective
            else "objective cleared"
        )
    if before.title != after.title and after.title is not None:
        out.append(f"document titled {_quote(after.title)}")
    b_body, a_body = before.body or "", after.body or ""
    if b_body != a_body:
        lines = list(
            difflib.unified_diff(b_body.splitlines(), a_body.splitlines(), n=0, lineterm="")
        )
        added = sum(1 for x in lines if x.startswith("+") and not x.startswith("+++"))
        removed = sum(1 for x in lines if x.startswith("-") and not x.startswith("---"))
        out.append(f"document edited (+{added} / −{removed} lines)")
    if before.preferences != after.preferences:
        old = _by_uid(items(before.preferences))
        for p in items(after.preferences):
            text, was = str(p.get("text", "")), old.get(str(p.get("uid")))
            if was is None:
                out.append(f"added {'locked ' if p.get('locked') else ''}preference {_quote(text)}")
                continue
            if was.get("text") != p.get("text"):
                out.append(f"preference reworded to {_quote(text)}")
            if bool(was.get("locked")) != bool(p.get("locked")):
                verb = "locked" if p.get("locked") else "unlocked"
                out.append(f"preference {_quote(text)} {verb}")
    if before.todos != after.todos:
        old = _by_uid(items(before.todos))
        for t in items(after.todos):
            text, was = str(t.get("text", "")), old.get(str(t.get("uid")))
            if was is None:
                out.append(f"added todo {_quote(text)}")
                continue
            if was.get("text") != t.get("text"):
                out.append(f"todo reworded to {_quote(text)}")
            if bool(was.get("done")) != bool(t.get("done")):
                out.append(f"todo {_quote(text)} {'done' if t.get('done') else 'reopened'}")
            if int(was.get("depth") or 0) != int(t.get("depth") or 0):
                out.append(f"todo {_quote(text)} moved to depth {int(t.get('depth') or 0)}")
    return out


def rejections(before: Facts, after: Facts, items: Items) -> list[str]:
    """The decisions a step rejected (items deleted during or after it)."""
    if before.rejected == after.rejected:
        return []
    known = {str(r.get("uid")) for r in items(before.rejected)}
    return [
        f"{r.get('surface', 'item')} {_quote(str(r.get('text', '')))}"
        for r in items(after.rejected)
        if str(r.get("uid")) not in known
    ]


async def build(
    db: Database, *, principal: Principal, thread_id: str, node: str | None, with_notes: bool
) -> PathDoc:
    async with db.read() as s:
        conv, _ = await get_for(s, principal, thread_id=thread_id, need=Role.VIEWER)
        if node is None:
            target = NodeId(conv.thread_id, conv.turn_index) if conv.turn_index > 0 else None
            end_conv = conv
        else:
            target = parse_node(node, name="node")
            end_conv, _ = await get_for(
                s,
                principal,
                thread_id=target.thread_id,
                need=Role.VIEWER,
            )
            if target.turn < 1 or target.turn > end_conv.turn_index:
                raise InvalidTurn(f"node {target} does not exist")
        path = await node_path(s, target) if target is not None else []
        final = await resolve_restore_state(s, end_conv, target.turn if target else 0)
        by_thread: dict[str, list[int]] = {}
        for n in path:
            by_thread.setdefault(n.thread_id, []).append(n.turn)
        records: dict[NodeId, Any] = {}
        arts: dict[str, dict[int, list[str]]] = {}
        for t, turns in by_thread.items():
            for row in await repo.path_records(s, t, min(turns), max(turns)):
                records[NodeId(t, row.turn_index)] = row
            arts[t] = await repo.artifact_titles(s, t)
        hashes = {r.document_hash for r in records.values() if r.document_hash}
        bodies = await repo.bodies(s, hashes)
        models = await repo.models_of(s, list(by_thread))
        notes: dict[NodeId, list[Note]] = {}
        if with_notes:
            for note in await repo.notes_of(s, list(by_thread)):
                notes.setdefault(NodeId(note.thread_id, note.turn_index), []).append(note)
        suffix: dict[str, list[int]] = {}
        roots: set[str] = set()
        for t in by_thread:
            row = await threads_repo.get_thread(s, t)
            if row is not None:
                roots.add(row.root_thread_id)
        for root in roots:
            family = await Family.load(s, root)
            shown = family.shown(root)
            suffix.update(
                labels.suffixes(shown, await repo.node_times(s, labels.continuation_points(shown)))
            )
    items = Items()
    final_facts = facts_of(final)
    steps: list[Step] = []
    for i, n in enumerate(path):
        record = records.get(n)
        if record is None:
            continue
        before = _facts(record, bodies)
        nxt = records.get(path[i + 1]) if i + 1 < len(path) else None
        after = _facts(nxt, bodies) if nxt is not None else final_facts
        step_changes = changes(before, after, items)
        made = arts.get(n.thread_id, {}).get(n.turn, [])
        step_changes += [f"created artifact {_quote(a)}" for a in made]
        steps.append(
            Step(
                node_id=str(n),
                label=labels.label(n.turn, suffix.get(n.thread_id, [])),
                state=record.state,
                started_at=aware(record.captured_at),
                user_message=record.user_message,
                reply=record.reply,
                model=models.get((n.thread_id, n.turn)),
                changes=step_changes,
                rejected=rejections(before, after, items),
                notes=notes.get(n, []),
            )
        )
    return PathDoc(
        title=conv.title or "Untitled conversation",
        node_id=str(path[-1]) if path else None,
        final=final,
        steps=steps,
        with_notes=with_notes,
    )


async def path_document(
    db: Database,
    *,
    principal: Principal,
    thread_id: str,
    node: str | None,
    fmt: Format,
    notes: bool,
) -> str:
    """The path to `node` (default: the thread's latest) as Markdown or HTML."""
    access.permit(principal, Deed.EXPORT)
    doc = await build(db, principal=principal, thread_id=thread_id, node=node, with_notes=notes)
    return render_html(doc) if fmt == "html" else render_markdown(doc)
