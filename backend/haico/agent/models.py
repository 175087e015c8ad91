"""Chat models: the offline deterministic model and the real providers.

`make_chat_model(settings)` picks one by `settings.llm`. The offline model needs no
key and implements the command table of docs/api.md ("The offline model"): each line, or
`;`-separated part, of the user's message that matches a command becomes a real tool
call (a `;` splits only where a command follows it, so text keeps its semicolons);
anything else gets a short streamed reply describing the workspace (read from
the system prompt's summary line). After tool results come back it streams a short
summary of what it did.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from langchain_core.callbacks import (
    AsyncCallbackManagerForLLMRun,
    CallbackManagerForLLMRun,
)
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolCall,
    ToolMessage,
)
from langchain_core.messages.tool import tool_call_chunk
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool
from pydantic import SecretStr

from haico.agent.prompts import SUMMARY_PREFIX
from haico.config import Settings

MAX_WAIT_SECONDS = 30.0

_TEXT = r"\s*(?P<text>.+?)\s*"
_N = r"\s+(?P<n>\d+)"


@dataclass(frozen=True)
class _Command:
    pattern: re.Pattern[str]
    tool: str
    args: Callable[[re.Match[str]], dict[str, Any]]


def _cmd(regex: str, tool: str, args: Callable[[re.Match[str]], dict[str, Any]]) -> _Command:
    return _Command(re.compile(rf"^\s*{regex}\s*$", re.IGNORECASE | re.DOTALL), tool, args)


def _text(m: re.Match[str]) -> dict[str, Any]:
    return {"text": m["text"]}


def _position(m: re.Match[str]) -> dict[str, Any]:
    return {"position": int(m["n"])}


# The command table of docs/api.md, in match order (`replace document:` before `write:`
# is irrelevant, but `subtodo:` must win over `todo:`).
COMMANDS: tuple[_Command, ...] = (
    _cmd(rf"objective:{_TEXT}", "set_objective", _text),
    _cmd(r"title:\s*(?P<title>.+?)", "set_document_title", lambda m: {"title": m["title"]}),
    _cmd(rf"write:{_TEXT}", "write_document", _text),
    _cmd(r"replace\s+document:\s*(?P<c>.*?)", "replace_document", lambda m: {"content": m["c"]}),
    _cmd(rf"prefer:{_TEXT}", "add_preference", _text),
    _cmd(rf"lock\s+preference{_N}", "lock_preference", _position),
    _cmd(rf"unlock\s+preference{_N}", "unlock_preference", _position),
    _cmd(rf"remove\s+preference{_N}", "remove_preference", _position),
    _cmd(rf"subtodo:{_TEXT}", "add_subtodo", _text),
    _cmd(rf"(?:add\s+)?todo:{_TEXT}", "add_todo", _text),
    _cmd(rf"done\s+todo{_N}", "done_todo", _position),
    _cmd(rf"undo\s+todo{_N}", "undo_todo", _position),
    _cmd(rf"remove\s+todo{_N}", "remove_todo", _position),
    _cmd(
        r"artifact\s+(?P<title>[^:]+?)\s*:\s*(?P<c>.*?)",
        "create_artifact",
        lambda m: {"title": m["title"], "content": m["c"]},
    ),
)
_WAIT = re.compile(r"^\s*wait:\s*(?P<s>\d+(?:\.\d+)?)\s*(?:s|sec|secs|seconds)?\s*$", re.I)


def is_command(part: str) -> bool:
    """Whether `part` is exactly one command of the table (or `wait:`)."""
    return _WAIT.match(part) is not None or any(c.pattern.match(part) for c in COMMANDS)


def split_parts(line: str) -> list[str]:
    """`line` cut at each `;` that a command follows; a `;` inside text stays in it
    ("write: done; it is a courtesy" writes the whole sentence), unless the part before
    is a command that takes no text ("done todo 2; thanks" still marks todo 2). Joining
    the parts with `;` gives `line` back: no character is lost."""
    parts: list[str] = []
    for piece in line.split(";"):
        joined = f"{parts[-1]};{piece}" if parts else ""
        if parts and not is_command(piece) and (is_command(joined) or not is_command(parts[-1])):
            parts[-1] = joined
        else:
            parts.append(piece)
    return parts


def parse_commands(text: str) -> tuple[list[tuple[str, dict[str, Any]]], float]:
    """The tool calls a message asks for, and its `wait:` seconds (0 when absent)."""
    calls: list[tuple[str, dict[str, Any]]] = []
    wait = 0.0
    for line in text.splitlines():
        for part in split_parts(line):
            if m := _WAIT.match(part):
                wait = min(float(m["s"]), MAX_WAIT_SECONDS)
                continue
            for cmd in COMMANDS:
                if cm := cmd.pattern.match(part):
                    calls.append((cmd.tool, cmd.args(cm)))
                    break
    return calls, wait


def split_words(text: str) -> list[str]:
    """Stream units: each word with the whitespace that follows it."""
    lead = re.match(r"\s*", text)
    words = re.findall(r"\S+\s*", text)
    if lead and lead.group() and words:
        words[0] = lead.group() + words[0]
    return words


@dataclass
class _Plan:
    text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    seconds: float = 0.0


def _content_text(message: BaseMessage) -> str:
    content = message.content
    if isinstance(content, str):
        return content
    return "".join(
        b if isinstance(b, str) else str(b.get("text", ""))
        for b in content
        if isinstance(b, str) or b.get("type") == "text"
    )


def _workspace_line(messages: Sequence[BaseMessage]) -> str:
    for m in messages:
        if isinstance(m, SystemMessage):
            for line in _content_text(m).splitlines():
                if line.startswith(SUMMARY_PREFIX):
                    return line[len(SUMMARY_PREFIX) :]
    return "the workspace is empty."


# Openings the offline model picks by a profile's `seed` (deterministically).
OPENINGS = (
    "Here is where we stand.",
    "A quick check-in.",
    "Noted.",
    "Understood.",
    "Right.",
    "Picking this up.",
    "Fine.",
)


def voice(seed: int | None, instructions: str) -> str:
    """How a profile's offline replies begin: an opening chosen by `seed` and the
    first line of its instructions ("" for the default profile: replies unchanged)."""
    parts = []
    if seed is not None:
        parts.append(f"{OPENINGS[seed % len(OPENINGS)]} (seed {seed})")
    first = instructions.strip().splitlines()[0].strip() if instructions.strip() else ""
    if first:
        parts.append(f"[{first[:80]}]")
    return " ".join(parts) + " " if parts else ""


def plan_reply(
    messages: Sequence[BaseMessage], seed: int | None = None, instructions: str = ""
) -> _Plan:
    """What the offline model answers to `messages` (pure and deterministic); a
    profile's `seed` and `instructions` change the reply's words, never its tool calls."""
    plan = _plan(messages)
    if plan.text:
        plan.text = voice(seed, instructions) + plan.text
    return plan


def _plan(messages: Sequence[BaseMessage]) -> _Plan:
    last_human = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    user_text = _content_text(messages[last_human]) if last_human >= 0 else ""
    calls, wait = parse_commands(user_text)
    results = [m for m in messages[last_human + 1 :] if isinstance(m, ToolMessage)]
    if results:
        done = " ".join(_content_text(r) for r in results)
        return _Plan(text=f"Done. {done}", seconds=wait)
    if calls:
        return _Plan(
            tool_calls=[
                ToolCall(name=name, args=args, id=f"call_{uuid.uuid4().hex[:24]}", type="tool_call")
                for name, args in calls
            ]
        )
    workspace = _workspace_line(messages)
    if wait:
        text = f"Taking {wait:g} seconds over this reply, as asked. Meanwhile, {workspace}"
    else:
        text = (
            f"I changed nothing this turn. Right now {workspace} "
            "Ask me with commands like “todo: …” or “prefer: …” to edit the workspace."
        )
    return _Plan(text=text, seconds=wait)


class OfflineChatModel(BaseChatModel):
    """A deterministic chat model that needs no key and drives real tool calls; a
    profile's `seed` and `instructions` shape its replies (`voice`)."""

    seed: int | None = None
    instructions: str = ""

    def _reply(self, messages: Sequence[BaseMessage]) -> _Plan:
        return plan_reply(messages, self.seed, self.instructions)

    @property
    def _llm_type(self) -> str:
        return "haico-offline"

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        # The schemas are only recorded: the command table already names the tools.
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools], **kwargs)

    @staticmethod
    def _message(plan: _Plan) -> AIMessage:
        return AIMessage(content=plan.text, tool_calls=plan.tool_calls)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=self._message(self._reply(messages)))]
        )

    async def _agenerate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        plan = self._reply(messages)
        if plan.seconds:
            await asyncio.sleep(plan.seconds)
        return ChatResult(generations=[ChatGeneration(message=self._message(plan))])

    @staticmethod
    def _chunks(plan: _Plan) -> Iterator[tuple[ChatGenerationChunk, float]]:
        if plan.tool_calls:
            chunks = [
                tool_call_chunk(name=c["name"], args=json.dumps(c["args"]), id=c["id"], index=i)
                for i, c in enumerate(plan.tool_calls)
            ]
            yield (
                ChatGenerationChunk(message=AIMessageChunk(content="", tool_call_chunks=chunks)),
                0,
            )
            return
        words = split_words(plan.text)
        delay = plan.seconds / len(words) if words else 0.0
        for word in words:
            yield ChatGenerationChunk(message=AIMessageChunk(content=word)), delay

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for chunk, delay in self._chunks(self._reply(messages)):
            if delay:
                time.sleep(delay)
            yield chunk

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for chunk, delay in self._chunks(self._reply(messages)):
            # Always yield control, so a cancelled turn stops between words.
            await asyncio.sleep(delay)
            yield chunk


def make_chat_model(settings: Settings) -> BaseChatModel:
    """The chat model `settings.llm` names; real providers stream their tokens."""
    if settings.llm == "openai":
        from haico.agent.openai_stream import LeanChatOpenAI

        return LeanChatOpenAI(
            model=settings.llm_model or "gpt-4o-mini",
            base_url=settings.llm_base_url,
            # Local OpenAI-compatible servers (Ollama, vLLM) accept any key.
            api_key=SecretStr(settings.llm_api_key or "not-needed"),
            streaming=True,
            # Ask every server for its usage report (`stream_options.include_usage`):
            # the node's provenance counts tokens from it.
            stream_usage=True,
        )
    if settings.llm == "anthropic":
        from langchain_anthropic import ChatAnthropic

        kwargs: dict[str, Any] = {}
        if settings.llm_base_url:
            kwargs["base_url"] = settings.llm_base_url
        return ChatAnthropic(
            model_name=settings.llm_model or "claude-sonnet-4-5",
            api_key=SecretStr(settings.llm_api_key or ""),
            streaming=True,
            max_tokens_to_sample=4096,
            timeout=None,
            stop=None,
            **kwargs,
        )
    return OfflineChatModel()
