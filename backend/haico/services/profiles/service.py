"""Model profiles: a user's named agent settings, a branch's profile, and the profile
a turn runs with.

`default` is the server's configured model; it always exists and is never stored.
A profile names a provider this server has (`agent.profiles.available_providers`):
keys and base URLs are server settings, so a profile for a provider the server lacks
is refused (`provider_unavailable`, 422). A branch's profile is
`conversations.profile_id`; a turn may override it. A deleted profile leaves its
branches on `default` (their nodes keep the provenance they were made with).
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from sqlalchemy import update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncSession

from haico.agent.profiles import (
    DEFAULT_MODELS,
    DEFAULT_PROFILE,
    RunProfile,
    available_providers,
    configured_model,
    default_profile,
)
from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import Conversation, ModelProfile
from haico.db.repositories import whatif as repo
from haico.errors import AlreadyExists, Forbidden, NotFound, ProviderUnavailable
from haico.schemas.conversations import ConversationOut
from haico.schemas.whatif import ProfileIn, ProfileOut, ProfileParams, ProfilePatch
from haico.services.access import rule as access
from haico.services.access.principal import Principal
from haico.services.access.rule import Deed, Role
from haico.services.families import conversations
from haico.services.families.conversations import get_for

log = logging.getLogger("haico.profiles")


def new_profile_id() -> str:
    return f"pr_{uuid.uuid4().hex[:24]}"


def _params(raw: dict[str, Any] | None) -> ProfileParams:
    return ProfileParams.model_validate(raw or {})


def profile_out(row: ModelProfile) -> ProfileOut:
    return ProfileOut(
        id=row.id,
        name=row.name,
        provider=row.provider,
        model=row.model,
        params=_params(row.params),
        instructions=row.instructions,
    )


def default_out(settings: Settings) -> ProfileOut:
    p = default_profile(settings)
    return ProfileOut(
        id=p.id,
        name=p.name,
        provider=p.provider,
        model=p.model,
        params=ProfileParams(),
        instructions="",
    )


def run_profile(row: ModelProfile) -> RunProfile:
    return RunProfile(
        id=row.id,
        name=row.name,
        provider=row.provider,
        model=row.model,
        params=_params(row.params).model_dump(exclude_none=True),
        instructions=row.instructions,
    )


def _check_provider(settings: Settings, provider: str) -> None:
    have = available_providers(settings)
    if provider not in have:
        raise ProviderUnavailable(
            f"this server has no {provider!r} provider configured (it has: {', '.join(have)}); "
            "keys and base URLs are server settings"
        )


def _model_for(settings: Settings, provider: str, model: str) -> str:
    if model.strip():
        return model.strip()
    if provider == settings.llm:
        return configured_model(settings)
    return DEFAULT_MODELS[provider]


async def _owned(s: AsyncSession, *, principal: Principal, profile_id: str) -> ModelProfile:
    row = await repo.get_profile(s, profile_id)
    if row is None:
        raise NotFound(f"profile {profile_id} not found")
    if row.user_id != principal.id:
        raise Forbidden(f"profile {profile_id} belongs to another user")
    return row


async def list_profiles(
    db: Database, settings: Settings, *, principal: Principal
) -> list[ProfileOut]:
    """`default` first, then the user's profiles by name."""
    access.permit(principal, Deed.PROFILES)
    async with db.read() as s:
        rows = await repo.profiles_of(s, principal.id)
    return [default_out(settings), *(profile_out(r) for r in rows)]


async def get_profile(
    db: Database, settings: Settings, *, principal: Principal, profile_id: str
) -> ProfileOut:
    access.permit(principal, Deed.PROFILES)
    if profile_id == DEFAULT_PROFILE:
        return default_out(settings)
    async with db.read() as s:
        return profile_out(await _owned(s, principal=principal, profile_id=profile_id))


async def create_profile(
    db: Database, settings: Settings, *, principal: Principal, body: ProfileIn
) -> ProfileOut:
    access.permit(principal, Deed.PROFILES)
    _check_provider(settings, body.provider)
    name = body.name.strip()
    if name == DEFAULT_PROFILE:
        raise AlreadyExists("the profile name 'default' is the server's")
    row = ModelProfile(
        id=new_profile_id(),
        user_id=principal.id,
        name=name,
        provider=body.provider,
        model=_model_for(settings, body.provider, body.model),
        params=body.params.model_dump(exclude_none=True),
        instructions=body.instructions,
    )
    try:
        async with db.transaction() as s:
            s.add(row)
    except IntegrityError as exc:
        raise AlreadyExists(f"you already have a profile named {name!r}") from exc
    return profile_out(row)


async def update_profile(
    db: Database, settings: Settings, *, principal: Principal, profile_id: str, body: ProfilePatch
) -> ProfileOut:
    access.permit(principal, Deed.PROFILES)
    if profile_id == DEFAULT_PROFILE:
        raise Forbidden("the default profile is the server's settings")
    try:
        async with db.transaction() as s:
            row = await _owned(s, principal=principal, profile_id=profile_id)
            if body.provider is not None:
                _check_provider(settings, body.provider)
                row.provider = body.provider
            if body.name is not None:
                if body.name.strip() == DEFAULT_PROFILE:
                    raise AlreadyExists("the profile name 'default' is the server's")
                row.name = body.name.strip()
            if body.model is not None or body.provider is not None:
                row.model = _model_for(settings, row.provider, body.model or "")
            if body.params is not None:
                row.params = body.params.model_dump(exclude_none=True)
            if body.instructions is not None:
                row.instructions = body.instructions
            out = profile_out(row)
    except IntegrityError as exc:
        raise AlreadyExists(f"you already have a profile named {body.name!r}") from exc
    return out


async def delete_profile(db: Database, *, principal: Principal, profile_id: str) -> None:
    """Delete the profile; the branches that used it run on `default` from now on."""
    access.permit(principal, Deed.PROFILES)
    if profile_id == DEFAULT_PROFILE:
        raise Forbidden("the default profile is the server's settings")
    async with db.transaction() as s:
        row = await _owned(s, principal=principal, profile_id=profile_id)
        await s.execute(
            update(Conversation)
            .where(Conversation.profile_id == profile_id)
            .values(profile_id=None)
        )
        await s.delete(row)


async def usable(
    s: AsyncSession, settings: Settings, *, principal: Principal, profile_id: str
) -> RunProfile:
    """The profile `profile_id` if the caller may run with it (theirs, or `default`; a
    study participant: its condition's only), on a provider this server has."""
    if principal.session is not None:
        return await _conditions(s, settings, principal=principal, profile_id=profile_id)
    if profile_id == DEFAULT_PROFILE:
        return default_profile(settings)
    row = await _owned(s, principal=principal, profile_id=profile_id)
    _check_provider(settings, row.provider)
    return run_profile(row)


async def _conditions(
    s: AsyncSession, settings: Settings, *, principal: Principal, profile_id: str
) -> RunProfile:
    """A participant runs with its condition's profile (the study owner's) and no other:
    never another profile, nor `default` where the condition names one."""
    assert principal.session is not None
    allowed = principal.session.profile_id or DEFAULT_PROFILE
    if profile_id != allowed:
        raise Forbidden("a study participant runs with its condition's model profile only")
    if profile_id == DEFAULT_PROFILE:
        return default_profile(settings)
    row = await repo.get_profile(s, profile_id)
    if row is None:
        raise NotFound(f"profile {profile_id} not found")
    _check_provider(settings, row.provider)
    return run_profile(row)


async def resolve(
    db: Database, settings: Settings, *, principal: Principal, profile_id: str
) -> RunProfile:
    """`usable` in a read of its own (a turn's override, checked before it opens)."""
    if profile_id == DEFAULT_PROFILE and principal.session is None:
        return default_profile(settings)
    async with db.read() as s:
        return await usable(s, settings, principal=principal, profile_id=profile_id)


async def of_branch(db: Database, settings: Settings, profile_id: str | None) -> RunProfile | None:
    """The branch's profile for a turn (None: the default). A profile deleted or whose
    provider went away meanwhile runs as the default."""
    if profile_id is None or profile_id == DEFAULT_PROFILE:
        return None
    try:
        async with db.read() as s:
            row = await repo.get_profile(s, profile_id)
    except Exception:
        # An opened turn runs with the default rather than failing (its provenance
        # says which profile it ran with).
        log.exception("could not read profile %s; the turn uses the default", profile_id)
        return None
    if row is None or row.provider not in available_providers(settings):
        return None
    return run_profile(row)


async def set_branch_profile(
    db: Database, settings: Settings, *, principal: Principal, thread_id: str, profile_id: str
) -> ConversationOut:
    """`PATCH …/{thread_id} {profile_id}`: the branch's turns run with this profile."""
    async with db.transaction() as s:
        conv, _ = await get_for(
            s, principal, thread_id=thread_id, for_update=True, need=Role.EDITOR
        )
        await usable(s, settings, principal=principal, profile_id=profile_id)
        conv.profile_id = None if profile_id == DEFAULT_PROFILE else profile_id
    return await conversations.get(db, principal=principal, thread_id=thread_id)
