"""Whether a family document can be imported, decided before anything is written.

`check` reads the document as a family graph and answers a `Plan` (new ids, each
thread's nodes and first own turn) or a 422 naming the first problem: threads in
order with valid branch points, nodes inside the turns their thread owns, every merge
naming a node of the document, codings and judgments on nodes of the document with
codes of its codebooks, and every limit a live write has (items, document length,
texts). `read_and_check` does the same from a request's bytes, off the event
loop. Writing the plan out is `importing`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from haico.domain import Limits, NodeId, new_thread_id
from haico.errors import InvalidInput
from haico.schemas.common import MAX_TEXT
from haico.schemas.export import (
    EXPORT_VERSION,
    ExportMergeBase,
    ExportNode,
    ExportThread,
    ExportWorkspace,
    FamilyExport,
)
from haico.services.families.model import first_owned_turn
from haico.services.transfer.reading import read_document


@dataclass
class Plan:
    """A checked document: new ids, and each thread's nodes and first own turn."""

    doc: FamilyExport
    ids: dict[str, str]
    nodes: dict[str, dict[int, ExportNode]] = field(default_factory=dict)
    first: dict[str, int] = field(default_factory=dict)

    @property
    def root(self) -> ExportThread:
        return self.doc.threads[0]


def _workspace_within(
    where: str, ws: ExportWorkspace | ExportMergeBase | None, limits: Limits
) -> None:
    """A workspace holds no more than a write could have put in it."""
    if ws is None:
        return
    if len(ws.preferences) > limits.items or len(ws.todos) > limits.items:
        raise InvalidInput(f"{where}: more than {limits.items} preferences or todos")
    texts = [p.text for p in ws.preferences] + [t.text for t in ws.todos]
    if isinstance(ws, ExportWorkspace):
        texts += [r.text for r in ws.rejected]
    if ws.objective is not None:
        texts.append(ws.objective)
    if any(len(text) > MAX_TEXT for text in texts):
        raise InvalidInput(f"{where}: a text exceeds {MAX_TEXT} characters")
    if isinstance(ws, ExportMergeBase):
        content = ws.content
    else:
        content = ws.document.content if ws.document is not None else None
    if content is not None and len(content) > limits.document_chars:
        raise InvalidInput(f"{where}: the document exceeds {limits.document_chars} characters")


def _within(n: ExportNode, limits: Limits) -> None:
    """A node's message, workspace and merge base fit the limits any other write path
    keeps."""
    # (its transcript's user entry is the message a later export reads)
    asked = [n.user_message] + [m.content for m in n.messages if m.role == "user"]
    if any(len(text) > limits.message_chars for text in asked):
        raise InvalidInput(f"nodes: {n.id}: the message exceeds {limits.message_chars} characters")
    _workspace_within(f"nodes: {n.id}", n.workspace, limits)
    _workspace_within(f"nodes: {n.id}: merge_base", n.merge_base, limits)


def _merge_sources(plan: Plan) -> None:
    """A merge (or pick) node names the node it brought in, a node of this document."""
    for n in plan.doc.nodes:
        if n.kind == "turn" and n.merged_from is None:
            continue
        source = NodeId.parse(n.merged_from or "")
        known = plan.nodes.get(source.thread_id, {}) if source is not None else {}
        if source is None or source.turn not in known:
            raise InvalidInput(f"nodes: {n.id}: merged_from names no node of the document")


def check(doc: FamilyExport, limits: Limits | None = None) -> Plan:
    """Validate the document as a family graph (422 on the first problem)."""
    limits = limits or Limits()
    if doc.version > EXPORT_VERSION:
        raise InvalidInput(
            f"version: the document is format version {doc.version}; this server reads "
            f"versions up to {EXPORT_VERSION}"
        )
    root = doc.threads[0]
    if root.thread_id != doc.root_thread_id or root.parent_thread_id is not None:
        raise InvalidInput("threads: the first thread must be the root (root_thread_id)")
    plan = Plan(doc, ids={})
    fork_point = doc.forked_from.turn_index if doc.forked_from else None
    for t in doc.threads:
        if t.thread_id in plan.ids:
            raise InvalidInput(f"threads: {t.thread_id} appears twice")
        if t is not root:
            parent = next((p for p in doc.threads if p.thread_id == t.parent_thread_id), None)
            if parent is None or parent.thread_id not in plan.ids:
                raise InvalidInput(f"threads: the parent of {t.thread_id} must come before it")
            bp = t.branch_point_turn
            if bp is None or bp > parent.turn_index or bp > t.turn_index:
                raise InvalidInput(f"threads: {t.thread_id} has no valid branch_point_turn")
            plan.first[t.thread_id] = first_owned_turn(bp)
        else:
            if t.branch_point_turn is not None:
                raise InvalidInput("threads: the root has no branch_point_turn")
            plan.first[t.thread_id] = first_owned_turn(None, fork_point)
        _workspace_within(f"threads: {t.thread_id}: workspace", t.workspace, limits)
        _workspace_within(f"threads: {t.thread_id}: start_workspace", t.start_workspace, limits)
        plan.ids[t.thread_id] = new_thread_id()
        plan.nodes[t.thread_id] = {}
    turns = {t.thread_id: t.turn_index for t in doc.threads}
    for n in doc.nodes:
        if n.thread_id not in turns or n.id != NodeId.format(n.thread_id, n.turn_index):
            raise InvalidInput(f"nodes: {n.id} does not name a node of a listed thread")
        if not plan.first[n.thread_id] <= n.turn_index <= turns[n.thread_id]:
            raise InvalidInput(f"nodes: {n.id} is outside the turns its thread owns")
        if n.turn_index in plan.nodes[n.thread_id]:
            raise InvalidInput(f"nodes: {n.id} appears twice")
        _within(n, limits)
        plan.nodes[n.thread_id][n.turn_index] = n
    _merge_sources(plan)
    _coding(plan)
    return plan


def _coding(plan: Plan) -> None:
    """422 unless the document's coding holds together: codebook keys and code names
    unique, a code's parent listed before it, every coding on a node of the document
    with a code of a listed codebook and a span inside its field, every judgment
    between two nodes of the document."""
    doc = plan.doc
    books: dict[str, set[str]] = {}
    for b in doc.codebooks:
        if b.key in books:
            raise InvalidInput(f"codebooks: {b.key} appears twice")
        names: set[str] = set()
        for c in b.codes:
            if c.name in names:
                raise InvalidInput(f"codebooks: {b.key}: the code {c.name!r} appears twice")
            if c.parent is not None and c.parent not in names:
                raise InvalidInput(f"codebooks: {b.key}: the parent of {c.name!r} must come first")
            names.add(c.name)
        books[b.key] = names
    for coding in doc.codings:
        where = f"codings: {coding.node_id}"
        node = _document_node(plan, coding.node_id, "codings")
        if coding.code not in books.get(coding.codebook, set()):
            raise InvalidInput(f"{where}: {coding.code!r} is no code of {coding.codebook}")
        span = coding.span
        if span is not None:
            text = node.user_message if span.field == "user_message" else node.reply
            if not 0 <= span.start < span.end <= len(text or ""):
                raise InvalidInput(f"{where}: the span lies outside its field")
    for j in doc.judgments:
        if j.a == j.b:
            raise InvalidInput(f"judgments: {j.a} is judged against itself")
        _document_node(plan, j.a, "judgments")
        _document_node(plan, j.b, "judgments")


def _document_node(plan: Plan, node_id: str, where: str) -> ExportNode:
    node = NodeId.parse(node_id)
    found = plan.nodes.get(node.thread_id, {}).get(node.turn) if node is not None else None
    if found is None:
        raise InvalidInput(f"{where}: {node_id} names no node of the document")
    return found


def read_and_check(body: bytes, limits: Limits) -> Plan:
    """The checked plan of an import's body (in a worker thread). A refusal is raised
    afresh once the first error's traceback is gone: that held the parsed document,
    which would otherwise be freed (millions of objects) on the event loop's thread."""
    try:
        return check(read_document(body), limits)
    except InvalidInput as exc:
        message = exc.message
    raise InvalidInput(message)
