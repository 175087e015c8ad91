"""Search across every branch of the caller's conversations.

The index (`search_entries`, a table of its own) holds each node's user message and
reply, written when the turn completes, and the document at the nodes where it
changed (a document that stays the same over many turns is indexed once, at the node
that made it so). A document edited after a thread's latest turn is that turn's node's
(the snapshot rule) and is indexed there at once (`index_live_document_in`). Imported
families index their nodes as they are written.
"""

from __future__ import annotations

import hashlib

from sqlalchemy.ext.asyncio import AsyncSession

from haico.db.dialect import Write, dialect_of
from haico.db.engine import Database
from haico.db.models import Conversation, ConversationBranch
from haico.db.repositories import heads as heads_repo
from haico.db.repositories import search as repo
from haico.db.repositories import threads as threads_repo
from haico.db.repositories import workspace as workspace_repo
from haico.domain import BranchStatus, NodeId
from haico.errors import InvalidInput
from haico.schemas.trees import SearchHit, SearchKind, SearchOut
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed
from haico.services.families.model import first_owned_turn
from haico.services.search.query import excluded_of, matches, snippet, terms_of
from haico.services.sharing import shares

_KINDS: dict[str, SearchKind] = {"user": "user", "assistant": "assistant", "note": "note"}


def digest_of(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


async def index_node_in(
    s: AsyncSession,
    *,
    thread_id: str,
    turn_index: int,
    user_message: str,
    reply: str,
    document: str | None,
    owner: tuple[int, str] | None = None,
) -> None:
    """Index one node: its user message, its reply, and the document after it when it
    differs from the last one indexed for the thread. `owner` is the thread's (user id,
    family root) when the caller knows it (read otherwise)."""
    write = await node_entries(
        s,
        thread_id=thread_id,
        turn_index=turn_index,
        user_message=user_message,
        reply=reply,
        document=document,
        owner=owner,
    )
    if write is not None:
        await s.execute(*write)


async def node_entries(
    s: AsyncSession,
    *,
    thread_id: str,
    turn_index: int,
    user_message: str,
    reply: str,
    document: str | None,
    owner: tuple[int, str] | None = None,
) -> Write | None:
    """The write that `index_node_in` runs (None: the thread is gone); it only reads."""
    if owner is None:
        conv = await threads_repo.get_thread(s, thread_id)
        if conv is None:
            return None
        owner = conv.user_id, conv.root_thread_id
    user_id, root_thread_id = owner
    texts: list[tuple[str, str, str | None]] = [
        ("user", user_message, None),
        ("assistant", reply, None),
    ]
    if document is not None and document.strip():
        digest = digest_of(document)
        if digest != await repo.last_document_digest(s, thread_id):
            texts.append(("document", document, digest))
    return repo.entries_write(
        s,
        user_id=user_id,
        root_thread_id=root_thread_id,
        thread_id=thread_id,
        turn_index=turn_index,
        texts=texts,
    )


async def index_live_document_in(
    s: AsyncSession, conv: Conversation, branch: ConversationBranch | None
) -> None:
    """The thread's live document was edited: index it as its head node's.

    By the snapshot rule the workspace after a thread's latest turn is that turn's
    node (snapshot k+1, taken when the next turn opens, is the same rows), so the
    node's document entry is replaced by the live text; as at a turn's end, there is
    none when the text is blank or the same as the last one indexed before the node.
    Nothing happens for a thread that owns no turn yet (a draft's or a new branch's
    live rows become its first turn's) or while a turn runs on the thread (the edit
    is that turn's, indexed when it closes). An edit committed while the closing
    statement runs may be missed by both; the next turn's close indexes it then.
    """
    k = conv.turn_index
    if branch is not None and branch.status != BranchStatus.ACTIVE:
        return
    if k < first_owned_turn(branch.branch_point_turn if branch else None, conv.forked_from_turn):
        return
    running = await heads_repo.get_active_turn(s, conv.root_thread_id, fresh=True)
    if running is not None and running.thread_id == conv.thread_id:
        return
    await repo.delete_documents_at(s, conv.thread_id, k)
    document = await workspace_repo.live_document_text(s, conv.thread_id)
    await _index_document_at(s, conv, k, document)


def new_node_document_write(
    s: AsyncSession,
    conv: Conversation,
    branch: ConversationBranch | None,
    document: str | None,
    *,
    before: str | None,
) -> Write | None:
    """The write that indexes the live text `document` at a node just made by a caller
    that holds the family's lock with no turn running (a merge), or None when there is
    nothing to index (as `index_live_document_in`): the node is new, so there is no
    entry at it to replace, and nothing to read. `before` is the live text the node
    replaced, the previous node's, which is what was indexed last before it (the
    snapshot rule): no need to read that digest either.

    On PostgreSQL the entry's text-search vector (for a large document the dearest
    part of the caller's transaction) is left for `services.search.vectors` to compute
    after the commit: the caller must have it filled when the write was made. Until
    then search does not match the entry."""
    if branch is not None and branch.status != BranchStatus.ACTIVE:
        return None
    if document is None or not document.strip():
        return None
    if before == document:  # (the same digest, without hashing both)
        return None
    digest = digest_of(document)
    if dialect_of(s).is_postgres:
        # The text as the document row's write sends it (one parameter for both).
        return repo.document_entry_write(
            user_id=conv.user_id,
            root_thread_id=conv.root_thread_id,
            thread_id=conv.thread_id,
            turn_index=conv.turn_index,
            document=document,
            digest=digest,
        )
    return repo.entries_write(
        s,
        user_id=conv.user_id,
        root_thread_id=conv.root_thread_id,
        thread_id=conv.thread_id,
        turn_index=conv.turn_index,
        texts=[("document", document, digest)],
    )


async def _index_document_at(
    s: AsyncSession, conv: Conversation, k: int, document: str | None
) -> None:
    """Index `document` at node k unless it is blank or what was indexed last before
    k."""
    if document is None or not document.strip():
        return
    digest = digest_of(document)
    if digest == await repo.last_document_digest(s, conv.thread_id, before=k):
        return
    await s.execute(
        *repo.entries_write(
            s,
            user_id=conv.user_id,
            root_thread_id=conv.root_thread_id,
            thread_id=conv.thread_id,
            turn_index=k,
            texts=[("document", document, digest)],
        )
    )


def turn_entries_write(
    thread_id: str, turn_index: int, user_message: str, reply: str, owner: tuple[int, str]
) -> Write:
    """PostgreSQL: the write that indexes a finished turn with the thread's live
    document, which the write reads itself, so no read comes first and it can go in
    the statement that closes the turn. `owner` is the thread's (user id, family
    root)."""
    user_id, root_thread_id = owner
    return repo.turn_entries_write(
        user_id=user_id,
        root_thread_id=root_thread_id,
        thread_id=thread_id,
        turn_index=turn_index,
        user_message=user_message,
        reply=reply,
    )


async def turn_entries(
    s: AsyncSession,
    thread_id: str,
    turn_index: int,
    user_message: str,
    reply: str,
    owner: tuple[int, str] | None = None,
) -> Write | None:
    """A turn completed: the write that indexes it with the thread's live document
    (the workspace after it), read here (SQLite; PostgreSQL closes a turn with
    `turn_entries_write`, which reads nothing first). `owner` as for
    `index_node_in`."""
    return await node_entries(
        s,
        thread_id=thread_id,
        turn_index=turn_index,
        user_message=user_message,
        reply=reply,
        document=await workspace_repo.live_document_text(s, thread_id),
        owner=owner,
    )


# Kinds rank in this order: a branch's name or summary, what the user asked, the
# replies, then documents (which repeat across many nodes).
_RANK = {"branch": 0, "user": 1, "assistant": 2}
# The index is asked for more than `limit` rows: some fail the whole-word check.
_OVERFETCH = 5


async def search(
    db: Database, *, principal: Principal, query: str, limit: int, shared: bool = False
) -> SearchOut:
    """The caller's nodes whose user message, reply or document, or whose branch's
    name or summary, holds every term of `query` as whole words (`search_query`).
    `shared`: the families shared with the caller (live shares) too."""
    access.permit(principal, Deed.LIST)
    query = query.strip()
    if not query:
        raise InvalidInput("q: must not be empty")
    terms, excluded = terms_of(query), excluded_of(query)
    if not terms:
        return SearchOut(results=[])
    fetch = limit * _OVERFETCH + 50
    roots = await shares.shared_roots(db, principal=principal) if shared else []
    async with db.read() as s:
        hits = await repo.find(s, user_id=principal.id, query=query, limit=fetch, roots=roots)
        words = [w for t in terms for w in t]
        branches = await repo.find_branches(
            s, user_id=principal.id, words=words, limit=fetch, roots=roots
        )
    found: list[tuple[int, int, SearchHit]] = []
    for i, b in enumerate(branches):
        text = " — ".join(x for x in (b.name, b.summary) if x)
        if b.turn_index < first_owned_turn(b.branch_point_turn, b.forked_from_turn):
            continue  # a branch that owns no node yet has none to open
        if matches(text, terms, excluded):
            hit = SearchHit(
                node_id=NodeId.format(b.thread_id, b.turn_index),
                thread_id=b.thread_id,
                root_thread_id=b.root_thread_id,
                kind="branch",
                snippet=snippet(text, terms),
            )
            found.append((_RANK["branch"], i, hit))
    for i, h in enumerate(hits):
        if not matches(h.content, terms, excluded):
            continue
        kind = _KINDS.get(h.kind, "document")
        hit = SearchHit(
            node_id=NodeId.format(h.thread_id, h.turn_index),
            thread_id=h.thread_id,
            root_thread_id=h.root_thread_id,
            kind=kind,
            snippet=snippet(h.content, terms),
        )
        found.append((_RANK.get(kind, 3), i, hit))
    found.sort(key=lambda x: (x[0], x[1]))
    return SearchOut(results=[hit for _, _, hit in found[:limit]])
