"""What the agent needs from the workspace: read it, apply one edit.

The agent package owns this contract; a service implements it over the database
(`AgentWorkspace`, in the services layer) and the runtime is handed that
implementation, so nothing in the agent package knows about storage.

An edit names items by their 1-based position in the list the model saw. `resolve`
checks an edit against the workspace it is about to change and words every refusal
the way the model is shown it; an implementation calls it inside the transaction of
`apply`, before writing anything.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Protocol, runtime_checkable

from haico.errors import InvalidInput
from haico.schemas.workspace import MAX_DEPTH

# ---- what the agent reads ----


@dataclass(frozen=True)
class DocumentView:
    title: str
    content: str


@dataclass(frozen=True)
class PreferenceView:
    id: int
    uid: str
    text: str
    locked: bool = False


@dataclass(frozen=True)
class TodoView:
    id: int
    uid: str
    text: str
    done: bool = False
    depth: int = 0


@dataclass(frozen=True)
class ArtifactView:
    id: int
    turn_index: int
    kind: str
    title: str


@dataclass(frozen=True)
class WorkspaceView:
    """A thread's live workspace, items in list order, and the thread's current turn."""

    objective: str | None
    document: DocumentView | None
    preferences: tuple[PreferenceView, ...] = ()
    todos: tuple[TodoView, ...] = ()
    artifacts: tuple[ArtifactView, ...] = ()
    turn_index: int = 0


# ---- what the agent changes ----


@dataclass(frozen=True)
class SetObjective:
    text: str


@dataclass(frozen=True)
class SetDocument:
    """Set the title, replace the body (`content`) or append a paragraph (`append`)."""

    title: str | None = None
    content: str | None = None
    append: str | None = None


@dataclass(frozen=True)
class AddPreference:
    text: str
    locked: bool = False


@dataclass(frozen=True)
class ChangePreference:
    """Reword, lock/unlock (fields left None stay) or, with `remove`, delete."""

    position: int
    text: str | None = None
    locked: bool | None = None
    remove: bool = False


@dataclass(frozen=True)
class AddTodo:
    """Append a todo at `depth`, or with `nest_under_last` one level under the last todo."""

    text: str
    depth: int = 0
    nest_under_last: bool = False


@dataclass(frozen=True)
class ChangeTodo:
    """Reword, mark done (`toggle` flips it), re-nest (fields left None stay) or remove."""

    position: int
    text: str | None = None
    done: bool | None = None
    toggle: bool = False
    depth: int | None = None
    remove: bool = False


@dataclass(frozen=True)
class CreateArtifact:
    """An artifact stamped with the thread's current turn."""

    title: str
    content: str


WorkspaceEdit = (
    SetObjective
    | SetDocument
    | AddPreference
    | ChangePreference
    | AddTodo
    | ChangeTodo
    | CreateArtifact
)


@runtime_checkable
class WorkspacePort(Protocol):
    """The workspace of a thread, as the agent uses it."""

    async def read(self, thread_id: str) -> WorkspaceView:
        """The live workspace (raises `NotFound` for an unknown thread)."""
        ...

    async def apply(self, thread_id: str, edit: WorkspaceEdit) -> WorkspaceView:
        """Check and perform `edit` in one transaction; return the workspace as it stood
        just before it, as far as the edit reads it: the objective, the turn and the
        lists named by `reads(edit)` (an implementation may fill in more). A refused
        edit (`DomainError`, e.g. `InvalidInput` from `resolve`, or a pydantic
        `ValidationError`) writes nothing."""
        ...


@runtime_checkable
class MergeNotes(Protocol):
    """What a port that knows merge nodes adds: the descriptions of the merges on a
    thread's path between two turns (the turns without a transcript of their own)."""

    async def merge_notes(
        self, thread_id: str, *, after_turn: int, before_turn: int
    ) -> tuple[str, ...]:
        """The merges of turns `after_turn` < k < `before_turn`, oldest first."""
        ...


async def merge_notes(
    port: WorkspacePort, thread_id: str, *, after_turn: int, before_turn: int
) -> tuple[str, ...]:
    """`port`'s merge notes, or none when it does not know merges."""
    if before_turn - after_turn <= 1 or not isinstance(port, MergeNotes):
        return ()
    return await port.merge_notes(thread_id, after_turn=after_turn, before_turn=before_turn)


def reads(edit: WorkspaceEdit) -> frozenset[str]:
    """The lists of the workspace that `resolve` checks `edit` against, and that a tool
    describes the edit with afterwards (`preferences`, `todos`)."""
    match edit:
        case ChangePreference():
            return frozenset({"preferences"})
        case AddTodo(nest_under_last=True) | ChangeTodo():
            return frozenset({"todos"})
        case _:
            return frozenset()


class StartingFrom:
    """`inner`, except that the first read of `thread_id` returns `view`, a workspace
    the caller read moments ago (a turn's agent starts from the workspace its snapshot
    recorded). Every later read, and every edit, goes to `inner`; an edit first drops
    `view`, which it would make stale."""

    def __init__(self, inner: WorkspacePort, thread_id: str, view: WorkspaceView) -> None:
        self.inner = inner
        self.thread_id = thread_id
        self.view: WorkspaceView | None = view

    async def read(self, thread_id: str) -> WorkspaceView:
        view, self.view = self.view, None
        if view is not None and thread_id == self.thread_id:
            return view
        return await self.inner.read(thread_id)

    async def apply(self, thread_id: str, edit: WorkspaceEdit) -> WorkspaceView:
        self.view = None
        return await self.inner.apply(thread_id, edit)

    async def merge_notes(
        self, thread_id: str, *, after_turn: int, before_turn: int
    ) -> tuple[str, ...]:
        return await merge_notes(
            self.inner, thread_id, after_turn=after_turn, before_turn=before_turn
        )


# ---- the checks every implementation applies ----


def _require(text: str, what: str) -> str:
    if not text.strip():
        raise InvalidInput(f"{what} must not be empty")
    return text.strip()


def _check_depth(depth: int) -> int:
    if not 0 <= depth <= MAX_DEPTH:
        raise InvalidInput(f"depth must be between 0 and {MAX_DEPTH}")
    return depth


def _check_position(count: int, position: int, kind: str) -> None:
    if not 1 <= position <= count:
        have = f"there are {count} {kind}s" if count else f"there are no {kind}s"
        raise InvalidInput(f"no {kind} at position {position} ({have}; positions are 1-based)")


def resolve(edit: WorkspaceEdit, before: WorkspaceView) -> WorkspaceEdit:
    """`edit` as it will be written on `before`: texts trimmed, the position checked, the
    depth in range, `toggle` and `nest_under_last` replaced by what they mean. Raises
    `InvalidInput` (worded for the model) when the edit cannot be honoured. After it, a
    `Change*` edit's `position` names an existing item."""
    match edit:
        case SetObjective(text=text):
            return SetObjective(_require(text, "the objective"))
        case SetDocument(title=title, append=append):
            if title is not None:
                edit = replace(edit, title=_require(title, "the title"))
            if append is not None:
                edit = replace(edit, append=_require(append, "the paragraph"))
            return edit
        case AddPreference(text=text):
            return replace(edit, text=_require(text, "the preference"))
        case ChangePreference(position=position):
            _check_position(len(before.preferences), position, "preference")
            return edit
        case AddTodo(text=text, depth=depth, nest_under_last=True):
            if not before.todos:
                raise InvalidInput("there is no todo to nest under; add a todo first")
            depth = _check_depth(before.todos[-1].depth + 1)
            return AddTodo(_require(text, "the todo"), depth)
        case AddTodo(text=text, depth=depth):
            return AddTodo(_require(text, "the todo"), _check_depth(depth))
        case ChangeTodo(position=position, toggle=toggle, depth=depth):
            _check_position(len(before.todos), position, "todo")
            if toggle:
                edit = replace(edit, done=not before.todos[position - 1].done, toggle=False)
            if depth is not None:
                _check_depth(depth)
            return edit
        case CreateArtifact(title=title):
            return replace(edit, title=_require(title, "the title"))
