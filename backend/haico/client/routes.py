"""Every REST call the client makes: method, path, the server's own request and answer
models. tests/client/test_routes.py holds them against the OpenAPI document, so a
route that moves or changes its shape on the server fails there, not in a notebook."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal
from urllib.parse import quote

from pydantic import BaseModel

from haico.schemas.coding import (
    AgreementOut,
    CodebookIn,
    CodebookOut,
    CodebookPatch,
    CodeSuggestion,
    CodingIn,
    CodingOut,
    JudgmentIn,
    JudgmentOut,
)
from haico.schemas.common import HealthOut
from haico.schemas.compare import Comparison
from haico.schemas.conversations import ConversationCreate, ConversationOut, ConversationPatch
from haico.schemas.export import FamilyExport
from haico.schemas.graph import GraphOut
from haico.schemas.history import BranchIn, CheckoutIn, ForkIn, HistoryOut
from haico.schemas.ledger import CodeCount, NodeOut, NoteIn, NoteOut, NotePatch
from haico.schemas.merge import MergeIn, MergeOut, MergePlan
from haico.schemas.studies import (
    JoinIn,
    JoinOut,
    MemberIn,
    MemberOut,
    ParticipantMe,
    StudyCreate,
    StudyOut,
    StudyPatch,
)
from haico.schemas.study_reports import ParticipantRow, StudyMetrics
from haico.schemas.trees import SearchOut
from haico.schemas.turns import MessageOut, TurnIn
from haico.schemas.whatif import JobOut, PathsCompared, ProfileIn, ProfileOut, ReplayIn
from haico.schemas.workspace import DocumentIn, ObjectiveIn, WorkspaceOut

# What a success answers: a JSON body (`answer`, a list of them with `many`), nothing
# (204), a stream of server-sent events, or text (CSV, Markdown, HTML).
Body = Literal["json", "empty", "sse", "text"]


@dataclass(frozen=True)
class Route:
    method: str
    path: str
    status: int
    body: Body = "json"
    request: type[BaseModel] | None = None
    answer: type[BaseModel] | None = None
    many: bool = False

    def url(self, **params: object) -> str:
        """The path with its parameters filled in, each percent-encoded."""
        return self.path.format(**{k: quote(str(v), safe="") for k, v in params.items()})


THREAD = "/api/conversations/{thread_id}"

HEALTH = Route("GET", "/api/health", 200, answer=HealthOut)
# Conversations
CREATE = Route(
    "POST", "/api/conversations", 201, request=ConversationCreate, answer=ConversationOut
)
LIST = Route("GET", "/api/conversations", 200, answer=ConversationOut, many=True)
GET = Route("GET", THREAD, 200, answer=ConversationOut)
PATCH = Route("PATCH", THREAD, 200, request=ConversationPatch, answer=ConversationOut)
DELETE = Route("DELETE", THREAD, 204, body="empty")
MESSAGES = Route("GET", THREAD + "/messages", 200, answer=MessageOut, many=True)
# Workspace
WORKSPACE = Route("GET", THREAD + "/workspace", 200, answer=WorkspaceOut)
OBJECTIVE = Route("PUT", THREAD + "/objective", 200, request=ObjectiveIn, answer=WorkspaceOut)
DOCUMENT = Route("PUT", THREAD + "/document", 200, request=DocumentIn, answer=WorkspaceOut)
# Turns
TURNS = Route("POST", THREAD + "/turns", 200, body="sse", request=TurnIn)
# Branching, history, graph, compare
BRANCH = Route("POST", THREAD + "/branch", 201, request=BranchIn, answer=ConversationOut)
FORK = Route("POST", THREAD + "/fork", 201, request=ForkIn, answer=ConversationOut)
HISTORY = Route("GET", THREAD + "/history", 200, answer=HistoryOut)
CHECKOUT = Route("POST", THREAD + "/checkout", 200, request=CheckoutIn, answer=HistoryOut)
GRAPH = Route("GET", THREAD + "/graph", 200, answer=GraphOut)
COMPARE = Route("GET", THREAD + "/compare", 200, answer=Comparison)
COMPARE_PATHS = Route("GET", THREAD + "/compare-paths", 200, answer=PathsCompared)
SEARCH = Route("GET", "/api/search", 200, answer=SearchOut)
# Merge and pick: a preview answers the plan (200), a merge the new node (201)
MERGE_PREVIEW = Route("POST", THREAD + "/merge", 200, request=MergeIn, answer=MergePlan)
MERGE = Route("POST", THREAD + "/merge", 201, request=MergeIn, answer=MergeOut)
# Export and import
EXPORT = Route("GET", THREAD + "/export", 200, answer=FamilyExport)
IMPORT = Route(
    "POST", "/api/conversations/import", 201, request=FamilyExport, answer=ConversationOut
)
# Research ledger
NODE = Route("GET", THREAD + "/nodes/{k}", 200, answer=NodeOut)
ADD_NOTE = Route("POST", THREAD + "/nodes/{k}/notes", 201, request=NoteIn, answer=NoteOut)
NOTES = Route("GET", THREAD + "/notes", 200, answer=NoteOut, many=True)
EDIT_NOTE = Route("PATCH", "/api/notes/{note_id}", 200, request=NotePatch, answer=NoteOut)
DELETE_NOTE = Route("DELETE", "/api/notes/{note_id}", 204, body="empty")
CODES = Route("GET", "/api/codes", 200, answer=CodeCount, many=True)
FAMILY_CSV = Route("GET", THREAD + "/export.csv", 200, body="text")
ALL_CSV = Route("GET", "/api/export.csv", 200, body="text")
PATH_DOCUMENT = Route("GET", THREAD + "/path", 200, body="text")
# Profiles and replay
PROFILES = Route("GET", "/api/profiles", 200, answer=ProfileOut, many=True)
CREATE_PROFILE = Route("POST", "/api/profiles", 201, request=ProfileIn, answer=ProfileOut)
REPLAY = Route("POST", THREAD + "/replay", 202, request=ReplayIn, answer=JobOut)
JOB = Route("GET", "/api/jobs/{job_id}", 200, answer=JobOut)
CANCEL_JOB = Route("POST", "/api/jobs/{job_id}/cancel", 200, answer=JobOut)

# Coding, agreement and datasets
CODEBOOKS = Route("GET", "/api/codebooks", 200, answer=CodebookOut, many=True)
CREATE_CODEBOOK = Route("POST", "/api/codebooks", 201, request=CodebookIn, answer=CodebookOut)
EDIT_CODEBOOK = Route(
    "PATCH", "/api/codebooks/{codebook_id}", 200, request=CodebookPatch, answer=CodebookOut
)
CODE_SUGGESTIONS = Route("GET", "/api/codebooks/suggestions", 200, answer=CodeSuggestion, many=True)
ADD_CODING = Route("POST", THREAD + "/nodes/{k}/codings", 201, request=CodingIn, answer=CodingOut)
CODINGS = Route("GET", THREAD + "/codings", 200, answer=CodingOut, many=True)
DELETE_CODING = Route("DELETE", "/api/codings/{coding_id}", 204, body="empty")
AGREEMENT = Route("GET", THREAD + "/agreement", 200, answer=AgreementOut)
STUDY = "/api/studies/{study_id}"
STUDY_AGREEMENT = Route("GET", STUDY + "/agreement", 200, answer=AgreementOut)
ADD_JUDGMENT = Route("POST", THREAD + "/judgments", 201, request=JudgmentIn, answer=JudgmentOut)
JUDGMENTS = Route("GET", THREAD + "/judgments", 200, answer=JudgmentOut, many=True)
FAMILY_QDPX = Route("GET", THREAD + "/export.qdpx", 200, body="text")
FAMILY_JSONL = Route("GET", THREAD + "/export.jsonl", 200, body="text")
FAMILY_PARQUET = Route("GET", THREAD + "/export.parquet", 200, body="text")
STUDY_QDPX = Route("GET", STUDY + "/export.qdpx", 200, body="text")
STUDY_JSONL = Route("GET", STUDY + "/export.jsonl", 200, body="text")
STUDY_PARQUET = Route("GET", STUDY + "/export.parquet", 200, body="text")

# Studies
STUDIES = Route("GET", "/api/studies", 200, answer=StudyOut, many=True)
CREATE_STUDY = Route("POST", "/api/studies", 201, request=StudyCreate, answer=StudyOut)
GET_STUDY = Route("GET", STUDY, 200, answer=StudyOut)
EDIT_STUDY = Route("PATCH", STUDY, 200, request=StudyPatch, answer=StudyOut)
ADD_MEMBER = Route("POST", STUDY + "/members", 201, request=MemberIn, answer=MemberOut)
MEMBERS = Route("GET", STUDY + "/members", 200, answer=MemberOut, many=True)
REMOVE_MEMBER = Route("DELETE", STUDY + "/members/{user}", 204, body="empty")
PARTICIPANTS = Route("GET", STUDY + "/participants", 200, answer=ParticipantRow, many=True)
STUDY_METRICS = Route("GET", STUDY + "/metrics", 200, answer=StudyMetrics)
STUDY_CSV = Route("GET", STUDY + "/export.csv", 200, body="text")
JOIN = Route("POST", "/api/studies/join", 201, request=JoinIn, answer=JoinOut)
ME = Route("GET", "/api/studies/participants/me", 200, answer=ParticipantMe)
CONSENT = Route("POST", "/api/studies/participants/me/consent", 200, answer=ParticipantMe)
FINISH = Route("POST", "/api/studies/participants/me/finish", 200, answer=ParticipantMe)

ALL: tuple[Route, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Route))
