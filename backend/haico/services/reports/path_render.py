"""A path document on the page: Markdown, or HTML that prints cleanly.

The shape of the document (`PathDoc`, its `Step`s) is defined here, with the two
renderings of it; `path_doc` reads a path from the databases into that shape.
Rendering reads nothing: it is a pure function of the document (and the clock, for the
"exported" line).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from haico.db.models import Note
from haico.domain import now
from haico.services.workspace.state import WorkspaceState


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


# The page's one inline stylesheet (its content policy allows exactly this text).
STYLESHEET = """
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
        f"<title>{_esc(doc.title)}</title><style>{STYLESHEET}</style></head><body>",
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
