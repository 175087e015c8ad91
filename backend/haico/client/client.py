"""`Client`: HAICO's REST API from Python (a notebook, a script), over httpx.

Answers are the server's own wire models (`haico.schemas`); a request body is checked
against the server's own request model before it is sent (a `pydantic.ValidationError`
names the field); every answer the server refuses raises `HaicoError`."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal, TypeVar, overload

import httpx
from pydantic import BaseModel

from haico.client import routes
from haico.client.analysis import AnalysisExport
from haico.client.coding import CodingCalls
from haico.client.errors import HaicoError
from haico.client.events import TurnCompleted, TurnEvent, TurnFailed, parse_stream
from haico.client.routes import Route
from haico.client.studies import StudyCalls
from haico.schemas.common import HealthOut
from haico.schemas.compare import Comparison
from haico.schemas.conversations import ConversationOut
from haico.schemas.export import FamilyExport
from haico.schemas.graph import GraphOut
from haico.schemas.history import BranchWorkspaceOverride, HistoryOut
from haico.schemas.ledger import CodeCount, NodeOut, NoteOut
from haico.schemas.merge import MergeOut, MergePlan
from haico.schemas.shares import SharedConversationOut
from haico.schemas.trees import SearchOut
from haico.schemas.turns import MessageOut
from haico.schemas.whatif import JobOut, PathsCompared, ProfileOut
from haico.schemas.workspace import WorkspaceOut

Model = TypeVar("Model", bound=BaseModel)
MergeMode = Literal["merge", "pick"]
JOB_ENDED = frozenset({"done", "failed", "cancelled"})


class _Unset:
    """An argument not given (distinct from None, which some fields take as a value)."""

    def __repr__(self) -> str:
        return "UNSET"


UNSET: Any = _Unset()


def _given(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not UNSET}


class Client(CodingCalls, StudyCalls):
    """`Client("http://127.0.0.1:8000")`, with `token=` when the server runs with
    `HAICO_AUTH=token` (a user's API token, or a share link's `sh_…`). Use it as a
    context manager, or call `close()`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        token: str | None = None,
        *,
        timeout: float = 30.0,
        http: httpx.Client | None = None,
    ) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._http = http or httpx.Client(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- the calls ----

    def _request(
        self,
        route: Route,
        *,
        body: Mapping[str, Any] | None = None,
        query: Mapping[str, Any] | None = None,
        **params: object,
    ) -> httpx.Response:
        payload = None
        if route.request is not None:
            # The server's own request model: a wrong field fails here, named.
            checked = route.request.model_validate(body or {})
            payload = checked.model_dump(mode="json", exclude_unset=True)
        response = self._http.request(
            route.method,
            route.url(**params),
            json=payload,
            params={k: v for k, v in (query or {}).items() if v is not None},
        )
        if response.status_code != route.status:
            raise HaicoError.from_response(response)
        return response

    @overload
    def _json(self, route: Route, model: type[Model], **kw: Any) -> Model: ...
    @overload
    def _json(self, route: Route, model: None = None, **kw: Any) -> Any: ...
    def _json(self, route: Route, model: type[Model] | None = None, **kw: Any) -> Any:
        response = self._request(route, **kw)
        return (model or route.answer or BaseModel).model_validate_json(response.content)

    def _list(self, route: Route, model: type[Model], **kw: Any) -> list[Model]:
        return [model.model_validate(item) for item in self._request(route, **kw).json()]

    # ---- conversations ----

    def health(self) -> HealthOut:
        return self._json(routes.HEALTH, HealthOut)

    def create_conversation(
        self, title: str | None = None, objective: str | None = None
    ) -> ConversationOut:
        body = _given(title=title or UNSET, objective=objective or UNSET)
        return self._json(routes.CREATE, ConversationOut, body=body)

    def conversations(
        self, *, archived: bool = False, shared: bool = False
    ) -> list[ConversationOut]:
        """The caller's active threads, branches included; `shared=True`: the families
        shared with the caller (each a `SharedConversationOut`, with `role`)."""
        query = {"archived": archived or None, "shared": shared or None}
        items = self._request(routes.LIST, query=query).json()
        return [
            (SharedConversationOut if "role" in item else ConversationOut).model_validate(item)
            for item in items
        ]

    def conversation(self, thread_id: str) -> ConversationOut:
        return self._json(routes.GET, ConversationOut, thread_id=thread_id)

    def rename(
        self,
        thread_id: str,
        *,
        title: str | None = UNSET,
        name: str | None = UNSET,
        archived: bool = UNSET,
        profile_id: str = UNSET,
    ) -> ConversationOut:
        """Change a thread's title, its branch `name` (None clears it), whether it is
        archived, or its model profile: only what is given changes."""
        body = _given(title=title, name=name, archived=archived, profile_id=profile_id)
        return self._json(routes.PATCH, ConversationOut, body=body, thread_id=thread_id)

    def delete_conversation(self, thread_id: str) -> None:
        self._request(routes.DELETE, thread_id=thread_id)

    def messages(self, thread_id: str) -> list[MessageOut]:
        return self._list(routes.MESSAGES, MessageOut, thread_id=thread_id)

    # ---- workspace ----

    def workspace(self, thread_id: str, as_of_turn: int | None = None) -> WorkspaceOut:
        query = {"as_of_turn": as_of_turn}
        return self._json(routes.WORKSPACE, WorkspaceOut, query=query, thread_id=thread_id)

    def set_objective(self, thread_id: str, text: str | None) -> WorkspaceOut:
        return self._json(routes.OBJECTIVE, WorkspaceOut, body={"text": text}, thread_id=thread_id)

    def set_document(self, thread_id: str, content: str, title: str = UNSET) -> WorkspaceOut:
        body = _given(content=content, title=title)
        return self._json(routes.DOCUMENT, WorkspaceOut, body=body, thread_id=thread_id)

    # ---- turns ----

    def send(
        self,
        thread_id: str,
        content: str,
        *,
        profile_id: str = UNSET,
        force: bool = False,
    ) -> Iterator[TurnEvent]:
        """Send a user message; iterate the reply's events as they stream. The last is a
        `TurnCompleted` or a `TurnFailed`. Leaving the loop early closes the stream
        (the turn itself runs on). A refusal before streaming (409 `turn_in_progress`,
        `checkout_would_discard_changes`, …) raises `HaicoError` at the first step."""
        route = routes.TURNS
        assert route.request is not None
        body = route.request.model_validate(_given(content=content, profile_id=profile_id))
        with self._http.stream(
            route.method,
            route.url(thread_id=thread_id),
            json=body.model_dump(mode="json", exclude_unset=True),
            params={"force": "true"} if force else None,
            timeout=httpx.Timeout(self._http.timeout.connect, read=None),
        ) as response:
            if response.status_code != route.status:
                response.read()
                raise HaicoError.from_response(response)
            yield from parse_stream(response.iter_lines())

    def say(
        self,
        thread_id: str,
        content: str,
        *,
        profile_id: str = UNSET,
        force: bool = False,
    ) -> TurnCompleted:
        """`send`, waited for: the completed turn (its node and reply); a turn that
        ends in an error raises `HaicoError` with the stream's code and message."""
        for event in self.send(thread_id, content, profile_id=profile_id, force=force):
            if isinstance(event, TurnCompleted):
                return event
            if isinstance(event, TurnFailed):
                raise HaicoError(event.code, event.message or "", 200)
        raise HaicoError("stream_ended", "the turn's stream ended before the turn did", 200)

    # ---- branching, history, graph, compare ----

    def branch(
        self,
        thread_id: str,
        from_turn: int,
        *,
        reason: str = UNSET,
        workspace: BranchWorkspaceOverride | Mapping[str, Any] = UNSET,
    ) -> ConversationOut:
        if isinstance(workspace, BaseModel):
            workspace = workspace.model_dump(mode="json", exclude_unset=True)
        body = _given(from_turn=from_turn, reason=reason, workspace=workspace)
        return self._json(routes.BRANCH, ConversationOut, body=body, thread_id=thread_id)

    def fork(self, thread_id: str, from_turn: int) -> ConversationOut:
        body = {"from_turn": from_turn}
        return self._json(routes.FORK, ConversationOut, body=body, thread_id=thread_id)

    def history(self, thread_id: str) -> HistoryOut:
        return self._json(routes.HISTORY, HistoryOut, thread_id=thread_id)

    def checkout(
        self,
        thread_id: str,
        turn_id: str | None,
        *,
        expected_head_turn_id: str | None = UNSET,
        force: bool = False,
    ) -> HistoryOut:
        """Move the family's head to node `turn_id` (None: the baseline). With
        `expected_head_turn_id`, only if the head is still that node (None: the baseline);
        `force=True` drops an edited draft."""
        body = _given(turn_id=turn_id, expected_head_turn_id=expected_head_turn_id)
        if force:
            body["force"] = True
        return self._json(routes.CHECKOUT, HistoryOut, body=body, thread_id=thread_id)

    def graph(self, thread_id: str) -> GraphOut:
        return self._json(routes.GRAPH, GraphOut, thread_id=thread_id)

    def compare(self, thread_id: str, a: str, b: str) -> Comparison:
        query = {"a": a, "b": b}
        return self._json(routes.COMPARE, Comparison, query=query, thread_id=thread_id)

    def compare_paths(self, thread_id: str, a: str, b: str) -> PathsCompared:
        query = {"a": a, "b": b}
        return self._json(routes.COMPARE_PATHS, PathsCompared, query=query, thread_id=thread_id)

    def search(self, q: str, limit: int | None = None) -> SearchOut:
        return self._json(routes.SEARCH, SearchOut, query={"q": q, "limit": limit})

    # ---- merge and pick ----

    def merge_preview(
        self, thread_id: str, source: str, mode: MergeMode = "merge", *, force: bool = False
    ) -> MergePlan:
        """What merging (or picking) node `source` into `thread_id` would change;
        nothing is written."""
        body = {
            "source": source,
            "mode": mode,
            "preview": True,
            **({"force": True} if force else {}),
        }
        return self._json(routes.MERGE_PREVIEW, MergePlan, body=body, thread_id=thread_id)

    def merge(
        self,
        thread_id: str,
        source: str,
        mode: MergeMode = "merge",
        *,
        resolutions: Mapping[str, Literal["ours", "theirs"]] = UNSET,
        expected_head_turn_id: str | None = UNSET,
        force: bool = False,
        label: str = UNSET,
    ) -> MergeOut:
        """Bring `source`'s work into `thread_id` as one new node. Unresolved conflicts
        raise `HaicoError` `merge_conflict` (its `data["plan"]` lists them)."""
        body = _given(
            source=source,
            mode=mode,
            resolutions=dict(resolutions) if resolutions is not UNSET else UNSET,
            expected_head_turn_id=expected_head_turn_id,
            label=label,
        )
        if force:
            body["force"] = True
        return self._json(routes.MERGE, MergeOut, body=body, thread_id=thread_id)

    # ---- export and import ----

    def export(self, thread_id: str) -> FamilyExport:
        """The whole family as one document (`import_family` makes a copy from it)."""
        return self._json(routes.EXPORT, FamilyExport, thread_id=thread_id)

    def import_family(self, document: FamilyExport | Mapping[str, Any]) -> ConversationOut:
        if isinstance(document, BaseModel):
            document = document.model_dump(mode="json")
        return self._json(routes.IMPORT, ConversationOut, body=document)

    # ---- research ledger ----

    def node(self, thread_id: str, k: int) -> NodeOut:
        return self._json(routes.NODE, NodeOut, thread_id=thread_id, k=k)

    def add_note(
        self, thread_id: str, k: int, text: str, codes: list[str] | None = None
    ) -> NoteOut:
        body = {"text": text, "codes": list(codes or [])}
        return self._json(routes.ADD_NOTE, NoteOut, body=body, thread_id=thread_id, k=k)

    def notes(self, thread_id: str) -> list[NoteOut]:
        return self._list(routes.NOTES, NoteOut, thread_id=thread_id)

    def edit_note(self, note_id: int, *, text: str = UNSET, codes: list[str] = UNSET) -> NoteOut:
        body = _given(text=text, codes=codes)
        return self._json(routes.EDIT_NOTE, NoteOut, body=body, note_id=note_id)

    def delete_note(self, note_id: int) -> None:
        self._request(routes.DELETE_NOTE, note_id=note_id)

    def codes(self) -> list[CodeCount]:
        return self._list(routes.CODES, CodeCount)

    def analysis_export(self, thread_id: str | None = None) -> AnalysisExport:
        """One row per node of the family of `thread_id`, or of every family of the
        caller; `.to_pandas()` with `pip install haico[analysis]`."""
        if thread_id is None:
            return AnalysisExport(self._request(routes.ALL_CSV).text)
        return AnalysisExport(self._request(routes.FAMILY_CSV, thread_id=thread_id).text)

    def path_document(
        self,
        thread_id: str,
        node: str | None = None,
        *,
        format: Literal["md", "html"] = "md",
        notes: bool = False,
    ) -> str:
        """A node's lineage as one Markdown (or HTML) document."""
        query = {"node": node, "format": format, "notes": "true" if notes else None}
        return self._request(routes.PATH_DOCUMENT, query=query, thread_id=thread_id).text

    # ---- model profiles and replay ----

    def profiles(self) -> list[ProfileOut]:
        return self._list(routes.PROFILES, ProfileOut)

    def create_profile(
        self,
        name: str,
        provider: Literal["offline", "openai", "anthropic"],
        *,
        model: str = UNSET,
        params: Mapping[str, Any] = UNSET,
        instructions: str = UNSET,
    ) -> ProfileOut:
        body = _given(
            name=name, provider=provider, model=model, params=params, instructions=instructions
        )
        return self._json(routes.CREATE_PROFILE, ProfileOut, body=body)

    def replay(
        self, thread_id: str, from_node: str, to_node: str, profile_id: str, repeats: int = 1
    ) -> JobOut:
        """Re-send the path `from_node … to_node` with another profile on new branches,
        in the background: the job to `wait` for."""
        body = {
            "from_node": from_node,
            "to_node": to_node,
            "profile_id": profile_id,
            "repeats": repeats,
        }
        return self._json(routes.REPLAY, JobOut, body=body, thread_id=thread_id)

    def job(self, job_id: str) -> JobOut:
        return self._json(routes.JOB, JobOut, job_id=job_id)

    def cancel_job(self, job_id: str) -> JobOut:
        return self._json(routes.CANCEL_JOB, JobOut, job_id=job_id)

    def wait(
        self,
        job: JobOut | str,
        *,
        progress: Callable[[JobOut], None] | None = None,
        timeout: float = 600.0,
        interval: float = 0.5,
    ) -> JobOut:
        """Poll a job until it is done, failed or cancelled, and answer it as it ended
        (a failed job is answered, not raised: its `error` says why). `progress` is
        called with the job whenever its state or progress moved. After `timeout`
        seconds, `TimeoutError` (the job runs on)."""
        job_id = job if isinstance(job, str) else job.id
        deadline = time.monotonic() + timeout
        seen: tuple[str, int, int] | None = None
        while True:
            current = self.job(job_id)
            now = (current.state, current.progress.done, current.progress.total)
            if progress is not None and now != seen:
                progress(current)
            seen = now
            if current.state in JOB_ENDED:
                return current
            if time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} still {current.state} after {timeout} s")
            time.sleep(interval)

    # Codings, judgments, agreement and datasets: `haico.client.coding.CodingCalls`.
    # Studies, members, joining and a participant's session: `haico.client.studies.StudyCalls`.
