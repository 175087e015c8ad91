"""Blind coding on the live paths: which coding actions reach a follower.

A coding's create and delete are logged on the family's annotations channel
(`annotations/set` of an annotation `coding-<id>`, `annotations/removed` of that id),
both naming their coder's user id in `_meta` (`haico/coderId`). Every path that hands
a logged action to a client (the family's and the study's event streams, an AHP
connection's live actions, its gap replays and its reconnect replay) asks
`visible_to` first, and applies the listing's rule (`codings.reader_of`,
`rule.sees_every_coding`): a coding action reaches a follower when the follower made
the coding, or sees every coding of that family now (its owner, the owner of its
study, or anyone once the family's or the study's codings are revealed).

Cheap on purpose: any other action passes without a look; one's own coding needs no
query; a follower that always sees a family's codings (its owner, its study's owner)
is remembered per family (`Gate`), so only someone else's coding, for a follower who
may be blind, reads the reveal state (one read per such action, and coding actions
are rare). That read is taken each time, so a reveal, or a hide again, counts from
the next coding action on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from haico.db.engine import Database
from haico.errors import DomainError
from haico.services.access.principal import Principal
from haico.services.coding.codings import CODER_ID, PREFIX, reader_of

# A coding action that names no coder (none is logged so) is nobody's own.
NOBODY = -1


def coder_of(action: dict[str, Any]) -> int | None:
    """The coder's user id when `action` creates or deletes a coding, else None."""
    kind = action.get("type")
    if kind == "annotations/set":
        annotation = action.get("annotation")
        if not isinstance(annotation, dict) or not str(annotation.get("id", "")).startswith(PREFIX):
            return None
        meta = annotation.get("_meta")
    elif kind == "annotations/removed":
        if not str(action.get("annotationId", "")).startswith(PREFIX):
            return None
        meta = action.get("_meta")
    else:
        return None
    coder = meta.get(CODER_ID) if isinstance(meta, dict) else None
    return coder if isinstance(coder, int) else NOBODY


@dataclass
class Gate:
    """One connection's standing on blind coding: its principal, and the families
    whose every coding it always sees (it owns them or runs their study)."""

    principal: Principal
    always: set[str] = field(default_factory=set)


async def visible_to(
    db: Database, gate: Gate, *, root_thread_id: str | None, action: dict[str, Any]
) -> bool:
    """Whether the logged `action` of the family `root_thread_id` may reach the
    follower `gate` stands for: any action but a coding action; a coding action when
    the follower made the coding or sees every coding of the family now. A follower
    who can no longer read the family sees none."""
    coder = coder_of(action)
    if coder is None or coder == gate.principal.id:
        return True
    if root_thread_id is None:
        return False
    if root_thread_id in gate.always:
        return True
    try:
        async with db.read() as s:
            reader = await reader_of(s, gate.principal, thread_id=root_thread_id)
    except DomainError:
        return False
    if reader.always:
        gate.always.add(root_thread_id)
    return reader.sees_all
