"""ORM models. Every table Alembic owns is declared here.

One file on purpose: the tables' foreign keys cross every feature and the schema is
read as a whole (alembic's autogenerate, `create_all`); the research ledger's tables
(`models_ledger`), the what-if tables (`models_whatif`) and the studies' tables
(`models_studies`), which no other table refers to, live apart.

Every moment a row records (created, captured, started, ...) is a `Stamp`: written by
the application (UTC, microseconds) the same way on both databases, including the
inserts nested in a larger statement or run on the driver directly. The server
defaults only fill a row written by hand: SQLite's `CURRENT_TIMESTAMP` keeps whole
seconds, so steps made within one second would tie and an order by time would differ
between the databases.
"""

from __future__ import annotations

import secrets
import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    String,
    Text,
    UniqueConstraint,
    false,
    func,
)
from sqlalchemy.orm import Mapped, mapped_column

from haico.db import compression
from haico.db.base import NAME_LEN, THREAD_ID_LEN, Base, BigId, JsonType, SearchVector, Stamp
from haico.domain import TITLE_CHARS, NodeState, now


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    name: Mapped[str] = mapped_column(String(200), unique=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    # The grantee of a share link: never signs in with an API token, never listed.
    is_link: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())


class ApiToken(Base):
    """A bearer token, stored as its SHA-256 hex digest."""

    __tablename__ = "api_tokens"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class Conversation(Base):
    """One thread. `turn_index` is the thread's turn clock; it never goes backwards."""

    __tablename__ = "conversations"

    thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), index=True)
    title: Mapped[str] = mapped_column(String(TITLE_CHARS), default="")
    # A short branch name the user gives a thread (the graph and history menu show it).
    name: Mapped[str | None] = mapped_column(String(NAME_LEN), nullable=True)
    objective: Mapped[str | None] = mapped_column(Text, nullable=True)
    turn_index: Mapped[int] = mapped_column(Integer, default=0)
    message_count: Mapped[int] = mapped_column(Integer, default=0)
    forked_from_thread_id: Mapped[str | None] = mapped_column(String(THREAD_ID_LEN), nullable=True)
    forked_from_turn: Mapped[int | None] = mapped_column(Integer, nullable=True)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    deleted_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # A fork still being built (its transcript not yet seeded): invisible everywhere.
    building: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    # Big trees: a one-line summary of the branch, and the turn clock it was written at
    # (`services.big_trees.summaries`); set when the user archives the branch (and, through it,
    # its descendants: `services.archive`). Nothing is deleted by archiving.
    summary: Mapped[str | None] = mapped_column(Text, nullable=True)
    summary_turn: Mapped[int | None] = mapped_column(Integer, nullable=True)
    archived_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    # The branch's model profile (`model_profiles.id`); null: the server's default.
    profile_id: Mapped[str | None] = mapped_column(String(40), nullable=True)
    # Coding (`services.coding`): whether every coder sees every coding of the family
    # (the root's row holds it; false: blind, each coder sees their own).
    reveal_codings: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())

    __table_args__ = (Index("ix_conversations_forked_from", "forked_from_thread_id"),)


class Document(Base):
    __tablename__ = "documents"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), unique=True
    )
    title: Mapped[str] = mapped_column(String(TITLE_CHARS), default="")
    content: Mapped[str] = mapped_column(Text, default="")
    # Set when the body is a stored version (a restored draft points at its snapshot's
    # body instead of copying it); `content` is then empty. Any edit writes `content`.
    body_hash: Mapped[str | None] = mapped_column(ForeignKey("document_bodies.hash"), nullable=True)


class Preference(Base):
    __tablename__ = "preferences"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(String(32))
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), index=True
    )
    text: Mapped[str] = mapped_column(Text)
    locked: Mapped[bool] = mapped_column(Boolean, default=False)
    position: Mapped[int] = mapped_column(Integer)


class Todo(Base):
    __tablename__ = "todos"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(String(32))
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), index=True
    )
    text: Mapped[str] = mapped_column(Text)
    done: Mapped[bool] = mapped_column(Boolean, default=False)
    depth: Mapped[int] = mapped_column(Integer, default=0)
    position: Mapped[int] = mapped_column(Integer)


class RejectedItem(Base):
    """A preference or todo the user or the agent deleted: kept as a rejected decision.

    `rejected_after_turn` is the thread's turn clock when it was deleted, so as-of
    reads show only what had been rejected by then. Copies of a workspace carry them.
    """

    __tablename__ = "rejected_items"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), index=True
    )
    uid: Mapped[str] = mapped_column(String(32))
    surface: Mapped[str] = mapped_column(String(20))
    text: Mapped[str] = mapped_column(Text)
    rejected_after_turn: Mapped[int] = mapped_column(Integer)


class Artifact(Base):
    __tablename__ = "artifacts"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), index=True
    )
    turn_index: Mapped[int] = mapped_column(Integer)
    # Stable identity: every copy (branch, fork, merge, export) keeps it.
    uid: Mapped[str] = mapped_column(String(32), default=lambda: uuid.uuid4().hex)
    kind: Mapped[str] = mapped_column(String(50), default="text")
    title: Mapped[str] = mapped_column(String(TITLE_CHARS))
    content: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class DocumentBody(Base):
    """Content-addressed document bodies: a body shared by many snapshots is stored once."""

    __tablename__ = "document_bodies"

    hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    content: Mapped[str] = mapped_column(Text)


class WorkspaceSnapshot(Base):
    """The workspace at the start of turn `turn_index`, plus that turn's node record.

    The row doubles as the turn node: its user message preview, state and reply
    preview. Document bodies live in `document_bodies`, referenced by hash.
    """

    __tablename__ = "workspace_snapshots"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE")
    )
    turn_index: Mapped[int] = mapped_column(Integer)
    format: Mapped[int] = mapped_column(Integer, default=3)
    objective: Mapped[str | None] = mapped_column(Text, nullable=True)
    document_title: Mapped[str | None] = mapped_column(String(TITLE_CHARS), nullable=True)
    document_hash: Mapped[str | None] = mapped_column(
        ForeignKey("document_bodies.hash"), nullable=True
    )
    preferences: Mapped[list[dict[str, Any]]] = mapped_column(JsonType, default=list)
    todos: Mapped[list[dict[str, Any]]] = mapped_column(JsonType, default=list)
    # Format 3 on: the rejected decisions as of this snapshot (null in older rows).
    rejected: Mapped[list[dict[str, Any]] | None] = mapped_column(JsonType, nullable=True)
    user_message: Mapped[str] = mapped_column(Text, default="")
    # `turn`, or `merge` for a node that brought another node's work in
    # (`services.merge`): its `user_message` describes what, `merged_from` names the
    # source node.
    kind: Mapped[str] = mapped_column(String(10), server_default="turn")
    merged_from: Mapped[str | None] = mapped_column(String(80), nullable=True)
    # A merge node: the source's workspace as it was merged (items, objective, title,
    # document body hash), the base of a later merge of the same path.
    merged_state: Mapped[dict[str, Any] | None] = mapped_column(
        JsonType, nullable=True, deferred=True
    )
    # Who sent the turn or made the merge when it was not the family's owner (an
    # editor of a shared family); null for the owner's own nodes.
    author: Mapped[str | None] = mapped_column(String(200), nullable=True)
    # An imported node: the author its document recorded (never taken as `author`).
    imported_author: Mapped[str | None] = mapped_column(String(200), nullable=True)
    state: Mapped[str] = mapped_column(String(20), default=NodeState.RUNNING.value)
    reply: Mapped[str] = mapped_column(Text, default="")
    captured_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    completed_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)

    __table_args__ = (UniqueConstraint("thread_id", "turn_index"),)


class ActiveTurn(Base):
    """The one running turn of a family, with the process serving it and a heartbeat."""

    __tablename__ = "active_turns"

    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), primary_key=True)
    thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN))
    turn_index: Mapped[int] = mapped_column(Integer)
    parent_turn_id: Mapped[str | None] = mapped_column(String(80), nullable=True)
    # The whole user message, durable before the model is called: a restart after a
    # crash writes it (and the reply streamed so far) into the transcript.
    user_message: Mapped[str] = mapped_column(Text, default="", server_default="")
    process_id: Mapped[str] = mapped_column(String(200))
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    started_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    heartbeat_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class ConversationBranch(Base):
    """Child thread -> parent thread at a branch point. `status` hides half-built rows."""

    __tablename__ = "conversation_branches"

    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), primary_key=True
    )
    parent_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), index=True)
    branch_point_turn: Mapped[int] = mapped_column(Integer)
    reason: Mapped[str | None] = mapped_column(Text, nullable=True)
    status: Mapped[str] = mapped_column(String(10), default="pending")
    dirty: Mapped[bool] = mapped_column(Boolean, default=False)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class ChatHead(Base):
    """A family's durable history state: the head node and the working thread.

    Invariant: the working thread's tip is the head. `version` grows with every move.
    """

    __tablename__ = "chat_heads"

    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), primary_key=True)
    head_turn_id: Mapped[str | None] = mapped_column(String(80), nullable=True)
    working_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN))
    version: Mapped[int] = mapped_column(Integer, default=0)
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())

    # Every ORM update of a head is conditional on the version it read (and bumps it):
    # a head moved by someone else since then makes the update fail, never win twice.
    __mapper_args__ = {"version_id_col": version}  # noqa: RUF012


class ActionLogEntry(Base):
    """One committed change as an AHP action; `seq` is the global serverSeq.

    Appends take a global lock (an advisory lock on Postgres, the write lock on
    SQLite), so sequence numbers follow commit order.
    """

    __tablename__ = "action_log"

    seq: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    root_thread_id: Mapped[str | None] = mapped_column(String(THREAD_ID_LEN), nullable=True)
    channel: Mapped[str] = mapped_column(String(200))
    action: Mapped[dict[str, Any]] = mapped_column(JsonType)
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())

    __table_args__ = (Index("ix_action_log_root_seq", "root_thread_id", "seq"),)


class PathChoice(Base):
    """The child a user last chose at a fork of a family (`services.history.chosen_path`).

    `fork_node_id` is the node with several children, or "" for the row that records
    the node at the end of the path the user last looked at.
    """

    __tablename__ = "path_choices"

    user_id: Mapped[int] = mapped_column(
        ForeignKey("users.id", ondelete="CASCADE"), primary_key=True
    )
    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN), primary_key=True)
    fork_node_id: Mapped[str] = mapped_column(String(80), primary_key=True)
    child_node_id: Mapped[str] = mapped_column(String(80))
    updated_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())


class SearchEntry(Base):
    """The search index: one row per searchable text of a node.

    `kind` is `user`, `assistant` or `document`; a document is indexed at the nodes
    where it changed. `tsv` is the PostgreSQL text-search vector (null on SQLite,
    which searches `content` directly). Reported apart from the transcript storage.
    """

    __tablename__ = "search_entries"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    root_thread_id: Mapped[str] = mapped_column(String(THREAD_ID_LEN))
    thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE")
    )
    turn_index: Mapped[int] = mapped_column(Integer)
    kind: Mapped[str] = mapped_column(String(12))
    content: Mapped[str] = mapped_column(Text)
    digest: Mapped[str | None] = mapped_column(String(64), nullable=True)
    tsv: Mapped[str | None] = mapped_column(SearchVector, nullable=True)

    __table_args__ = (
        Index("ix_search_entries_node", "thread_id", "turn_index"),
        Index("ix_search_entries_user_id", "user_id"),
        Index("ix_search_entries_tsv", "tsv", postgresql_using="gin"),
    )


SHARE_UID_PREFIX = "shr_"


def new_share_uid() -> str:
    return SHARE_UID_PREFIX + secrets.token_hex(12)


class Share(Base):
    """A role on a whole family (`root_thread_id`), granted to a named user or through a
    link. A link's grantee is a user row of its own (`users.is_link`), so notes and
    actions name it; its token is stored only as a SHA-256 hex digest. `uid` is the id
    a client sees (`shr_` + 24 random hex digits): unlike `id` it cannot be counted, so
    nobody learns how many shares exist or guesses another's."""

    __tablename__ = "shares"

    id: Mapped[int] = mapped_column(BigId, primary_key=True, autoincrement=True)
    uid: Mapped[str] = mapped_column(String(40), unique=True)
    root_thread_id: Mapped[str] = mapped_column(
        ForeignKey("conversations.thread_id", ondelete="CASCADE"), index=True
    )
    grantee_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(10))
    token_hash: Mapped[str | None] = mapped_column(String(64), unique=True, nullable=True)
    created_by: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(Stamp, default=now, server_default=func.now())
    expires_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(DateTime(timezone=True), nullable=True)


# The research ledger's, the what-if, the studies' and coding's tables live in their own
# modules; named here so that every table is registered on Base.metadata by importing
# this one (and for the existing imports).
from haico.db.models_coding import Code, Codebook, Coding, Judgment  # noqa: E402
from haico.db.models_ledger import NodeProvenance, Note, WorkspaceEdit  # noqa: E402
from haico.db.models_studies import (  # noqa: E402
    Study,
    StudyCondition,
    StudyMember,
    StudyParticipant,
)
from haico.db.models_whatif import Job, ModelProfile  # noqa: E402

# The large columns' lz4 compression, applied by `create_all` as the migrations do.
compression.register(Base.metadata)

__all__ = [
    "NAME_LEN",
    "THREAD_ID_LEN",
    "Code",
    "Codebook",
    "Coding",
    "Job",
    "Judgment",
    "ModelProfile",
    "NodeProvenance",
    "Note",
    "Study",
    "StudyCondition",
    "StudyMember",
    "StudyParticipant",
    "WorkspaceEdit",
]
