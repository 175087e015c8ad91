"""A path as a document: one node's lineage, written out for reading and printing.

The document holds the node's path and nothing else (never a step of another
branch): the final workspace, then each step from the first (its label, the user's
message, the reply, what changed, what was rejected, and with `notes` the
researcher's notes). Markdown, or HTML that prints cleanly (the browser's "Save as
PDF").

Every step's "before" is its own snapshot (the workspace at its start) and its
"after" the next step's snapshot, or for the last step the workspace as of it
(`resolve_restore_state`): the snapshot rule, read in bulk, one query per thread of
the path, so a long path costs a handful of queries.
"""

from __future__ import annotations

import difflib
import html
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from app.db.engine import Database
from app.db.models import Note
from app.db.repositories import ledger as repo
from app.db.repositories import threads as threads_repo
from app.domain import NodeId, aware, now
from app.errors import InvalidTurn
from app.services import labels
from app.services.access import Role
from app.services.compare import node_path, parse_node
from app.services.conversations import get_owned
from app.services.family import Family
from app.services.snapshots import resolve_restore_state
from app.services.workspace_state import WorkspaceState

Format = Literal["md", "html"]


@dataclass
class Step:
    node_id: str
    label: str
    state: str
    started_at: datetime
    user_message: str
    reply: str
    model: str | None
    changes: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)


@dataclass
class PathDoc:
    title: str
    node_id: str | None
    final: WorkspaceState
    steps: list[Step]
    with_notes: bool


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
    db: Database, *, user_id: int, thread_id: str, node: str | None, with_notes: bool
) -> PathDoc:
    async with db.read() as s:
        conv, _ = await get_owned(s, thread_id=thread_id, user_id=user_id, need=Role.VIEWER)
        if node is None:
            target = NodeId(conv.thread_id, conv.turn_index) if conv.turn_index > 0 else None
            end_conv = conv
        else:
            target = parse_node(node, name="node")
            end_conv, _ = await get_owned(
                s,
                thread_id=target.thread_id,
                user_id=user_id,
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
    db: Database, *, user_id: int, thread_id: str, node: str | None, fmt: Format, notes: bool
) -> str:
    """The path to `node` (default: the thread's latest) as Markdown or HTML."""
    doc = await build(db, user_id=user_id, thread_id=thread_id, node=node, with_notes=notes)
    return render_html(doc) if fmt == "html" else render_markdown(doc)


# ---- rendering ----


def _steps(n: int) -> str:
    return f"{n} step" if n == 1 else f"{n} steps"


def _md_block(text: str) -> list[str]:
    return [f"> {line}" if line else ">" for line in (text or "(empty)").splitlines()] or ["> "]


def _final_md(ws: WorkspaceState) -> list[str]:
    out = ["## Final workspace", "", f"**Objective:** {ws.objective or '(none)'}", ""]
    if ws.document is not None:
        out += [
            f"### Document: {ws.document.title or '(untitled)'}",
            "",
            ws.document.content or "(empty)",
            "",
        ]
    out += ["### Preferences", ""]
    out += [f"- {'🔒 ' if p.locked else ''}{p.text}" for p in ws.preferences] or ["(none)"]
    out += ["", "### Open todos", ""]
    out += [f"{'  ' * t.depth}- [ ] {t.text}" for t in ws.todos if not t.done] or ["(none)"]
    out += ["", "### Artifacts", ""]
    out += [f"- {a.title} (turn {a.turn_index})" for a in ws.artifacts] or ["(none)"]
    return [*out, ""]


def render_markdown(doc: PathDoc) -> str:
    out = [f"# {doc.title}", ""]
    out.append(
        f"The path to step {doc.steps[-1].label if doc.steps else '—'} "
        f"({doc.node_id or 'no steps yet'}): {_steps(len(doc.steps))}. "
        f"Exported {now().strftime('%Y-%m-%d %H:%M UTC')}."
    )
    out += ["", *_final_md(doc.final), "## Steps", ""]
    for step in doc.steps:
        state = "" if step.state == "complete" else f" ({step.state})"
        out += [f"### Step {step.label}{state}", ""]
        meta = [step.started_at.strftime("%Y-%m-%d %H:%M UTC"), step.node_id]
        if step.model:
            meta.append(step.model)
        out += [f"*{' · '.join(meta)}*", "", "**User:**", "", *_md_block(step.user_message), ""]
        out += ["**Agent:**", "", *_md_block(step.reply), ""]
        if step.changes:
            out += ["**Changed:**", "", *(f"- {c}" for c in step.changes), ""]
        if step.rejected:
            out += ["**Rejected:**", "", *(f"- {r}" for r in step.rejected), ""]
        if doc.with_notes and step.notes:
            out += ["**Notes:**", ""]
            for n in step.notes:
                codes = f" `{'` `'.join(n.codes)}`" if n.codes else ""
                out.append(f"- {n.text}{codes} — {n.author}")
            out.append("")
    return "\n".join(out).rstrip() + "\n"


_CSS = """
body{font:15px/1.5 Georgia,'Times New Roman',serif;max-width:46rem;margin:2rem auto;
padding:0 1rem;color:#1b1b1b}
h1{font-size:1.6rem;margin-bottom:.2rem}
h2{border-bottom:1px solid #bbb;padding-bottom:.2rem;margin-top:2rem}
h3{margin:1.4rem 0 .3rem}.meta{color:#555;font-size:.85rem}
blockquote{margin:.3rem 0 .6rem;padding:.3rem .8rem;border-left:3px solid #ccc;white-space:pre-wrap}
.user{border-color:#4a6fa5}.agent{border-color:#8a8a8a}
.doc{white-space:pre-wrap;border:1px solid #ddd;padding:.6rem .8rem;background:#fafafa}
.code{font:12px monospace;background:#eee;border-radius:3px;padding:0 .3rem;margin-left:.3rem}
section.step{break-inside:avoid-page}
@media print{body{margin:0;max-width:none;font-size:11pt}a{color:inherit}}
"""


def _esc(text: str | None) -> str:
    return html.escape(text or "")


def _list(items: Sequence[str]) -> str:
    if not items:
        return "<p>(none)</p>"
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def render_html(doc: PathDoc) -> str:
    ws = doc.final
    parts = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_esc(doc.title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(doc.title)}</h1>",
        f'<p class="meta">The path to step {_esc(doc.steps[-1].label) if doc.steps else "—"} '
        f"({_esc(doc.node_id or 'no steps yet')}): {_steps(len(doc.steps))}. "
        f"Exported {now().strftime('%Y-%m-%d %H:%M UTC')}.</p>",
        "<h2>Final workspace</h2>",
        f"<p><strong>Objective:</strong> {_esc(ws.objective) or '(none)'}</p>",
    ]
    if ws.document is not None:
        parts.append(f"<h3>Document: {_esc(ws.document.title) or '(untitled)'}</h3>")
        parts.append(f'<div class="doc">{_esc(ws.document.content) or "(empty)"}</div>')
    parts.append("<h3>Preferences</h3>")
    parts.append(_list([("🔒 " if p.locked else "") + _esc(p.text) for p in ws.preferences]))
    parts.append("<h3>Open todos</h3>")
    parts.append(_list([_esc(t.text) for t in ws.todos if not t.done]))
    parts.append("<h3>Artifacts</h3>")
    parts.append(_list([f"{_esc(a.title)} (turn {a.turn_index})" for a in ws.artifacts]))
    parts.append("<h2>Steps</h2>")
    for step in doc.steps:
        state = "" if step.state == "complete" else f" ({_esc(step.state)})"
        meta = [step.started_at.strftime("%Y-%m-%d %H:%M UTC"), step.node_id]
        if step.model:
            meta.append(step.model)
        parts.append(f'<section class="step" data-node-id="{_esc(step.node_id)}">')
        parts.append(f"<h3>Step {_esc(step.label)}{state}</h3>")
        parts.append(f'<p class="meta">{_esc(" · ".join(meta))}</p>')
        user = _esc(step.user_message)
        parts.append(f'<blockquote class="user"><strong>User:</strong> {user}</blockquote>')
        parts.append(
            f'<blockquote class="agent"><strong>Agent:</strong> {_esc(step.reply)}</blockquote>'
        )
        if step.changes:
            parts.append(
                "<p><strong>Changed:</strong></p>" + _list([_esc(c) for c in step.changes])
            )
        if step.rejected:
            parts.append(
                "<p><strong>Rejected:</strong></p>" + _list([_esc(r) for r in step.rejected])
            )
        if doc.with_notes and step.notes:
            items = [
                _esc(n.text)
                + "".join(f'<span class="code">{_esc(c)}</span>' for c in n.codes or [])
                + f" — {_esc(n.author)}"
                for n in step.notes
            ]
            parts.append("<p><strong>Notes:</strong></p>" + _list(items))
        parts.append("</section>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
