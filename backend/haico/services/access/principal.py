"""Who is calling: the principal a request or an AHP connection is resolved to, once.

Three kinds of caller reach the services:

- a user (an API token, or the local user when auth is off);
- a share link (`sh_…`): a user row of its own that reaches one family;
- a study participant (`pt_…`): a user row of its own that owns one family, the one
  its study seeded for it; its `Session` says which study and which condition, with
  the features the condition allows (`require`), resolved once with the token.

Services take the principal, never a bare user id, so the one rule (`access.rule`) can
tell a link from a user without looking at the URL.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from haico.errors import FeatureOff


class Kind(StrEnum):
    USER = "user"
    LINK = "link"
    PARTICIPANT = "participant"


class Feature(StrEnum):
    """What a study's condition may turn off. The server refuses `branching`, `merge`
    and `whatif` when off (`require`); `graph` is the studio's to hide."""

    GRAPH = "graph"
    BRANCHING = "branching"
    MERGE = "merge"
    WHATIF = "whatif"


@dataclass(frozen=True)
class Session:
    """A participant's place in its study: the participant and study ids, the
    condition's features that are on, and its model profile (None: the default).
    Conditions never change once the study exists, so this is read once per token."""

    participant_id: str
    study_id: str
    condition_id: str
    features: frozenset[Feature]
    profile_id: str | None = None


@dataclass(frozen=True)
class Principal:
    # The user row the caller acts as: its own, a link's or a participant's.
    id: int
    name: str
    kind: Kind = Kind.USER
    # The root of the one family a link or a participant reaches (None for a user).
    family: str | None = None
    # A link's share row, so an open connection can notice its revocation.
    share_id: int | None = None
    # A participant's study session (None for anyone else).
    session: Session | None = None

    def __post_init__(self) -> None:
        if (self.kind is Kind.USER) != (self.family is None):
            raise ValueError("a link or a participant reaches exactly one family; a user any")
        if (self.kind is Kind.PARTICIPANT) != (self.session is not None):
            raise ValueError("a participant, and only a participant, has a study session")


def require(principal: Principal, feature: Feature) -> None:
    """403 `feature_off` when the caller is a participant whose condition turns
    `feature` off; anyone else may."""
    session = principal.session
    if session is not None and feature not in session.features:
        raise FeatureOff(f"{feature.value} is turned off in this study's condition")
