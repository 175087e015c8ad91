"""Domain errors and the one table that maps them to HTTP statuses and AHP codes."""

from __future__ import annotations

from typing import Any, ClassVar


class DomainError(Exception):
    """An error a service raises on purpose; its `code` decides the status."""

    code: ClassVar[str] = "error"

    def __init__(self, message: str, *, data: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.data = data or {}


class NotFound(DomainError):
    code = "not_found"


class Forbidden(DomainError):
    code = "forbidden"


class Unauthorized(DomainError):
    code = "unauthorized"


class InvalidInput(DomainError):
    code = "invalid_input"


class InvalidTurn(DomainError):
    """A turn number that the thread's clock does not reach."""

    code = "invalid_turn"


class InvalidBranchPoint(DomainError):
    code = "invalid_branch_point"


class SnapshotMissing(DomainError):
    code = "snapshot_missing"


class Conflict(DomainError):
    code = "conflict"


class LeaseHeld(Conflict):
    """Another transaction holds the family's head lock (a checkout asked NOWAIT)."""


class TurnInProgress(DomainError):
    code = "turn_in_progress"


class CheckoutWouldDiscardChanges(DomainError):
    code = "checkout_would_discard_changes"


class MergeConflict(DomainError):
    """A merge with conflicts no resolution settles; `data.plan` is the plan."""

    code = "merge_conflict"


class NothingToMerge(DomainError):
    """The target already has every change the source would bring."""

    code = "nothing_to_merge"


class AlreadyExists(DomainError):
    """A client-chosen id (an AHP session or chat URI) is already in use."""

    code = "already_exists"


class SeedingFailed(DomainError):
    code = "seeding_failed"


class SharingNeedsTokenAuth(DomainError):
    """Shares name users and carry tokens: they exist only with `HAICO_AUTH=token`."""

    code = "sharing_needs_token_auth"


class StudiesNeedTokenAuth(DomainError):
    """Studies hand out join links and participant tokens: only with `HAICO_AUTH=token`."""

    code = "studies_need_token_auth"


class StudyClosed(DomainError):
    """A join link of a study its owner closed."""

    code = "study_closed"


class FeatureOff(DomainError):
    """What a participant's condition turns off (branching, merge, what-if)."""

    code = "feature_off"


class ConsentRequired(DomainError):
    """A participant's write before it consented to the study's consent text."""

    code = "consent_required"


class PayloadTooLarge(DomainError):
    code = "payload_too_large"


class StoreUnavailable(DomainError):
    """The database (app tables or checkpointer) could not be reached."""

    code = "store_unavailable"
    MESSAGE = "The database is unreachable; the request did not complete. Try again shortly."


class ProviderUnavailable(DomainError):
    """A model profile names a provider this server has no settings for."""

    code = "provider_unavailable"


class TooManyJobs(DomainError):
    """The user already has as many background jobs as the server allows."""

    code = "too_many_jobs"


class TooManyStreams(DomainError):
    """The user already holds as many event streams and AHP sockets as allowed."""

    code = "too_many_streams"


class NotSiblings(DomainError):
    """A pairwise judgment of two nodes that do not share a parent."""

    code = "not_siblings"


# code -> (HTTP status, AHP JSON-RPC error code)
ERROR_TABLE: dict[str, tuple[int, int]] = {
    NotFound.code: (404, -32008),
    InvalidTurn.code: (404, -32008),
    Forbidden.code: (403, -32009),
    Unauthorized.code: (401, -32009),
    InvalidInput.code: (422, -32602),
    InvalidBranchPoint.code: (400, -32602),
    SnapshotMissing.code: (409, -32011),
    Conflict.code: (409, -32011),
    TurnInProgress.code: (409, -32004),
    CheckoutWouldDiscardChanges.code: (409, -32012),
    AlreadyExists.code: (409, -32003),
    MergeConflict.code: (409, -32011),
    NothingToMerge.code: (422, -32602),
    SeedingFailed.code: (502, -32603),
    PayloadTooLarge.code: (413, -32602),
    SharingNeedsTokenAuth.code: (400, -32602),
    StudiesNeedTokenAuth.code: (400, -32602),
    StudyClosed.code: (403, -32009),
    FeatureOff.code: (403, -32009),
    ConsentRequired.code: (403, -32009),
    StoreUnavailable.code: (503, -32603),
    ProviderUnavailable.code: (422, -32602),
    TooManyJobs.code: (429, -32603),
    TooManyStreams.code: (429, -32603),
    NotSiblings.code: (422, -32602),
}


def http_status(error: DomainError) -> int:
    return ERROR_TABLE.get(error.code, (500, -32603))[0]
