"""What one turn cost, measured while it runs: tokens, time to first token, tool calls.

Token counts come from the provider's usage report on each model reply (an
OpenAI-compatible server sends it when asked with `stream_options.include_usage`,
Anthropic in its message events; LangChain puts it on `usage_metadata`). A reply
without a report is estimated from characters (`state.estimate_tokens`) and the turn
is marked `estimated`. Text streamed by a call that never finished (a cancelled or
failed turn) is estimated too, so an interrupted turn keeps what it used.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from langchain_core.messages import AIMessage, BaseMessage

from haico.agent.state import CHARS_PER_TOKEN, estimate_tokens

# The configurable key under which a run carries its `Meter`.
METER = "haico_meter"


@dataclass
class Meter:
    """One turn's measurements; `started` is the turn's start on the monotonic clock."""

    started: float = field(default_factory=time.monotonic)
    first_token_at: float | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    estimated: bool = False
    model_calls: int = 0
    tool_calls: int = 0
    model: str | None = None
    # Characters streamed by the model call in progress (not yet counted).
    pending_chars: int = 0

    def text(self, chunk: str) -> None:
        """A chunk of reply text arrived."""
        if self.first_token_at is None:
            self.first_token_at = time.monotonic()
        self.pending_chars += len(chunk)

    def reply(self, message: AIMessage, prompt: Sequence[BaseMessage]) -> None:
        """A model call finished with `message`, having been sent `prompt`."""
        self.model_calls += 1
        self.pending_chars = 0
        self.tool_calls += len(message.tool_calls)
        name = (message.response_metadata or {}).get("model_name") or (
            message.response_metadata or {}
        ).get("model")
        if isinstance(name, str) and name:
            self.model = name
        usage = message.usage_metadata
        if usage and (usage.get("input_tokens") or usage.get("output_tokens")):
            self.input_tokens += int(usage.get("input_tokens") or 0)
            self.output_tokens += int(usage.get("output_tokens") or 0)
            return
        self.estimated = True
        self.input_tokens += estimate_tokens(prompt)
        self.output_tokens += estimate_tokens([message])

    def interrupted(self) -> None:
        """The turn ended inside a model call: count what it streamed, estimated."""
        if self.pending_chars:
            self.estimated = True
            self.output_tokens += -(-self.pending_chars // CHARS_PER_TOKEN)
            self.pending_chars = 0

    def first_token_ms(self) -> int | None:
        if self.first_token_at is None:
            return None
        return int((self.first_token_at - self.started) * 1000)

    def counted(self) -> bool:
        """Whether any model call was counted (else the token counts are unknown)."""
        return self.model_calls > 0 or self.output_tokens > 0
