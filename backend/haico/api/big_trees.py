"""REST: big trees — pruning suggestions and the chosen path (archive is a PATCH of
the conversation, summaries ride on the graph and the conversation)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fastapi import APIRouter

from haico.api.deps import Caller, HandlesDep, ThreadId
from haico.api.errors import responses
from haico.schemas.trees import ChosenPathIn, ChosenPathOut, SuggestionOut
from haico.services.big_trees import suggestions
from haico.services.history import chosen_path

router = APIRouter(prefix="/api/conversations", tags=["big trees"])


@router.get("/{thread_id}/suggestions", responses=responses(403, 404))
async def get_suggestions(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller
) -> list[SuggestionOut]:
    """Branches of the family worth archiving: idle, no workspace change, or the same
    net change as a sibling."""
    return await suggestions.suggest(
        handles.db,
        principal=caller,
        thread_id=thread_id,
        idle_after=timedelta(days=handles.settings.suggest_idle_days),
        now=datetime.now(UTC),
    )


@router.get("/{thread_id}/chosen-path", responses=responses(403, 404))
async def get_chosen_path(
    thread_id: ThreadId, handles: HandlesDep, caller: Caller
) -> ChosenPathOut:
    """The path the caller last looked at in this family, and the child chosen at
    each fork."""
    return await chosen_path.recall(handles.db, principal=caller, thread_id=thread_id)


@router.put("/{thread_id}/chosen-path", responses=responses(403, 404, 413))
async def put_chosen_path(
    thread_id: ThreadId, body: ChosenPathIn, handles: HandlesDep, caller: Caller
) -> ChosenPathOut:
    """Remember `node_id`'s path: every fork above it remembers the child it takes."""
    return await chosen_path.remember(
        handles.db, principal=caller, thread_id=thread_id, node_id=body.node_id
    )
