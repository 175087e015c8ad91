"""Model profiles as a run sees them: which provider and model answer a turn, with
which parameters and instructions.

A profile never holds a key or a base URL: those stay server settings, so a profile
picks among the providers this server has (`available_providers`). Each provider
takes the parameters it supports (`SUPPORTED`); the others are recorded as ignored
in the node's provenance. The instructions are appended to the system prompt (every
provider sees them); the offline model also honours them and `seed` in its replies,
deterministically, so two profiles give visibly different answers.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage
from langchain_core.runnables import Runnable
from pydantic import SecretStr

from haico.agent.models import OfflineChatModel, make_chat_model
from haico.agent.prompts import SYSTEM_TEMPLATE
from haico.agent.tools import TOOLS
from haico.config import Settings

DEFAULT_PROFILE = "default"
PROVIDERS = ("offline", "openai", "anthropic")
# The model name a provider is reported with when the settings name none.
DEFAULT_MODELS = {"offline": "haico-offline", "openai": "gpt-4o-mini", "anthropic": "claude"}
SUPPORTED: dict[str, frozenset[str]] = {
    "offline": frozenset({"seed"}),
    "openai": frozenset({"temperature", "max_tokens", "seed"}),
    "anthropic": frozenset({"temperature", "max_tokens"}),
}
# The configurable key under which a run carries its `BoundProfile`.
RUN_PROFILE = "haico_profile"
INSTRUCTIONS_HEADING = "## Instructions for this agent"


@dataclass(frozen=True)
class RunProfile:
    """The settings one turn runs with (`default`: the server's configured model)."""

    id: str
    name: str
    provider: str
    model: str
    params: dict[str, Any] = field(default_factory=dict)
    instructions: str = ""

    @property
    def is_default(self) -> bool:
        return self.id == DEFAULT_PROFILE

    def applied(self) -> dict[str, Any]:
        """The parameters this provider takes (set ones only)."""
        ok = SUPPORTED.get(self.provider, frozenset())
        return {k: v for k, v in self.params.items() if k in ok and v is not None}

    def ignored(self) -> list[str]:
        """The parameters set on the profile that this provider does not take."""
        ok = SUPPORTED.get(self.provider, frozenset())
        return sorted(k for k, v in self.params.items() if v is not None and k not in ok)

    def instructions_sha256(self) -> str:
        """The hash of what the model is instructed with: the prompt template, and the
        profile's instructions after it when there are any."""
        text = (
            SYSTEM_TEMPLATE if not self.instructions else f"{SYSTEM_TEMPLATE}\n{self.instructions}"
        )
        return hashlib.sha256(text.encode()).hexdigest()

    def cache_key(self) -> tuple[Any, ...]:
        return (
            self.provider,
            self.model,
            tuple(sorted(self.applied().items())),
            self.instructions,
        )


def configured_model(settings: Settings) -> str:
    return settings.llm_model or DEFAULT_MODELS.get(settings.llm, settings.llm)


def default_profile(settings: Settings) -> RunProfile:
    return RunProfile(
        id=DEFAULT_PROFILE,
        name=DEFAULT_PROFILE,
        provider=settings.llm,
        model=configured_model(settings),
    )


def available_providers(settings: Settings) -> tuple[str, ...]:
    """The providers this server can run: the offline model (it needs no key) and the
    one the settings configure."""
    return tuple(p for p in PROVIDERS if p in ("offline", settings.llm))


def instructions_section(instructions: str) -> str:
    """The system prompt's part that carries a profile's instructions."""
    return f"\n{INSTRUCTIONS_HEADING}\n{instructions.strip()}\n" if instructions.strip() else ""


@dataclass(frozen=True)
class BoundProfile:
    """A profile's chat model with the tools bound, and its instructions."""

    profile: RunProfile
    bound: Runnable[LanguageModelInput, AIMessage]


def make_profile_model(settings: Settings, profile: RunProfile) -> BaseChatModel:
    """The chat model `profile` names, with the server's key and base URL."""
    p = profile.applied()
    if profile.provider == "offline":
        return OfflineChatModel(seed=p.get("seed"), instructions=profile.instructions)
    if profile.provider == "openai":
        from haico.agent.openai_stream import LeanChatOpenAI

        kwargs: dict[str, Any] = {k: p[k] for k in ("temperature", "max_tokens", "seed") if k in p}
        return LeanChatOpenAI(
            model=profile.model or configured_model(settings),
            base_url=settings.llm_base_url,
            api_key=SecretStr(settings.llm_api_key or "not-needed"),
            streaming=True,
            stream_usage=True,
            **kwargs,
        )
    if profile.provider == "anthropic":
        from langchain_anthropic import ChatAnthropic

        extra: dict[str, Any] = {}
        if settings.llm_base_url:
            extra["base_url"] = settings.llm_base_url
        if "temperature" in p:
            extra["temperature"] = p["temperature"]
        return ChatAnthropic(
            model_name=profile.model or configured_model(settings),
            api_key=SecretStr(settings.llm_api_key or ""),
            streaming=True,
            max_tokens_to_sample=int(p.get("max_tokens") or 4096),
            timeout=None,
            stop=None,
            **extra,
        )
    return make_chat_model(settings)


class ProfileModels:
    """Bound chat models per profile, built once and reused (a process keeps a few)."""

    MAX = 32

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self._bound: dict[tuple[Any, ...], BoundProfile] = {}

    def get(self, profile: RunProfile) -> BoundProfile:
        key = profile.cache_key()
        found = self._bound.get(key)
        if found is None:
            if len(self._bound) >= self.MAX:
                self._bound.pop(next(iter(self._bound)))
            model = make_profile_model(self.settings, profile)
            found = BoundProfile(profile, model.bind_tools(TOOLS))
            self._bound[key] = found
        return found
