"""The system prompt, rebuilt every turn from the live workspace."""

from __future__ import annotations

from haico.agent.port import WorkspacePort, WorkspaceView

DOCUMENT_PREVIEW_CHARS = 4000
SUMMARY_PREFIX = "Workspace summary: "

SYSTEM_TEMPLATE = """\
You are HAICO's co-construction agent. You and a researcher build an artifact together:
an objective, a document, preferences, todos and artifacts. Use the tools to change the
workspace; positions in tool arguments are 1-based, as listed below. Keep replies short
and say what you changed.

{workspace}
{omitted}{merged}
{summary_prefix}{summary}"""

OMITTED_TEMPLATE = """
## Earlier turns
{count} earlier {turns} of this conversation {are} not shown: only the most recent turns
fit the context window. The workspace above is the long-term memory of this work; rely on
it for anything decided in earlier turns, and record there what must be remembered.
"""


MERGED_TEMPLATE = """
## Brought in from other paths
Since your last turn the researcher brought work from other paths of this conversation
into the workspace (it is already in the workspace above). A note from the system, not
a message from the researcher:
{lines}
"""


def merged_note(notes: tuple[str, ...]) -> str:
    """The prompt's note of the merges made since the last turn ("" when none were)."""
    if not notes:
        return ""
    return MERGED_TEMPLATE.format(lines="\n".join(f"- {_quote(n)}" for n in notes))


def omitted_note(count: int) -> str:
    """The prompt's note that `count` earlier turns are left out ("" when none are)."""
    if count <= 0:
        return ""
    return OMITTED_TEMPLATE.format(
        count=count, turns="turn" if count == 1 else "turns", are="is" if count == 1 else "are"
    )


def _quote(text: str) -> str:
    return text.replace("\n", " ").strip()


def render_workspace(ws: WorkspaceView) -> str:
    """The workspace as the model sees it; locked preferences are binding constraints."""
    lines = [f"## Objective\n{ws.objective or '(none yet)'}", "", "## Document"]
    if ws.document is None:
        lines.append("(no document yet)")
    else:
        body = ws.document.content
        if len(body) > DOCUMENT_PREVIEW_CHARS:
            cut = len(body) - DOCUMENT_PREVIEW_CHARS
            body = body[:DOCUMENT_PREVIEW_CHARS] + f"\n[… {cut} more characters not shown]"
        lines.append(f"Title: {ws.document.title or '(untitled)'}")
        lines.append(body or "(empty)")

    locked = [(i, p) for i, p in enumerate(ws.preferences, 1) if p.locked]
    loose = [(i, p) for i, p in enumerate(ws.preferences, 1) if not p.locked]
    lines += ["", "## Binding constraints (locked preferences)"]
    if locked:
        lines.append(
            "These are the researcher's locked preferences. They are binding: every reply "
            "and every edit MUST satisfy them; never contradict, weaken or remove them."
        )
        lines += [f"{i}. [LOCKED] {_quote(p.text)}" for i, p in locked]
    else:
        lines.append("(none)")
    lines += ["", "## Preferences (follow unless the researcher says otherwise)"]
    lines += [f"{i}. {_quote(p.text)}" for i, p in loose] or ["(none)"]

    lines += ["", "## Todos"]
    lines += [
        f"{'  ' * t.depth}{i}. [{'x' if t.done else ' '}] {_quote(t.text)} (depth {t.depth})"
        for i, t in enumerate(ws.todos, 1)
    ] or ["(none)"]

    lines += ["", "## Artifacts"]
    lines += [f"- {a.title} (turn {a.turn_index})" for a in ws.artifacts] or ["(none)"]
    return "\n".join(lines)


def summarize_workspace(ws: WorkspaceView) -> str:
    """One line describing the workspace (what the offline model says back)."""
    parts = [f"the objective is “{_quote(ws.objective)}”" if ws.objective else "no objective yet"]
    if ws.document is None:
        parts.append("no document")
    else:
        words = len(ws.document.content.split())
        parts.append(f"the document “{ws.document.title or 'untitled'}” has {words} words")
    n_locked = sum(1 for p in ws.preferences if p.locked)
    parts.append(f"{len(ws.preferences)} preferences ({n_locked} locked)")
    n_done = sum(1 for t in ws.todos if t.done)
    parts.append(f"{len(ws.todos)} todos ({n_done} done)")
    parts.append(f"{len(ws.artifacts)} artifacts")
    return "; ".join(parts) + "."


def system_prompt(
    ws: WorkspaceView, *, omitted_turns: int = 0, merged: tuple[str, ...] = ()
) -> str:
    """The prompt for one model call; `omitted_turns` earlier turns are outside the
    context window (the prompt then says so); `merged` describes the merges made since
    the last turn."""
    return SYSTEM_TEMPLATE.format(
        workspace=render_workspace(ws),
        omitted=omitted_note(omitted_turns),
        merged=merged_note(merged),
        summary_prefix=SUMMARY_PREFIX,
        summary=summarize_workspace(ws),
    )


async def load_system_prompt(
    workspace: WorkspacePort,
    thread_id: str,
    *,
    omitted_turns: int = 0,
    merged: tuple[str, ...] = (),
) -> str:
    """Read the live workspace of `thread_id` and render the prompt for this step."""
    return system_prompt(
        await workspace.read(thread_id), omitted_turns=omitted_turns, merged=merged
    )
