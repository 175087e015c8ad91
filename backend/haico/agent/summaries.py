"""Branch summaries: one line that says what a branch did.

The offline provider derives it from the branch's user messages and its net workspace
change, deterministically; a real provider asks the summary model
(`HAICO_SUMMARY_MODEL`, else the chat model) for it. The caller runs either off the
turn's path (`services.big_trees.summaries`).
"""

from __future__ import annotations

from collections.abc import Sequence

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import HumanMessage, SystemMessage

from haico.agent.models import make_chat_model
from haico.config import Settings

MAX_SUMMARY_CHARS = 160

SUMMARY_INSTRUCTIONS = (
    "You name branches of a research conversation. Answer with one line of at most "
    "twelve words that says what this branch did. No quotes, no trailing period."
)


def one_line(text: str, chars: int = MAX_SUMMARY_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= chars else flat[: chars - 1].rstrip() + "…"


def offline_summary(messages: Sequence[str], changes: Sequence[str]) -> str:
    """What the offline provider writes: the net change, then the first message."""
    did = ", ".join(changes) if changes else "no workspace change"
    turns = f"{len(messages)} turn" + ("" if len(messages) == 1 else "s")
    first = one_line(messages[0], 60) if messages else ""
    return one_line(f"{did} · {turns}" + (f" — “{first}”" if first else ""))


def make_summary_model(settings: Settings) -> BaseChatModel | None:
    """The summary model for a real provider; None for the offline one."""
    if settings.llm == "offline":
        return None
    model = settings.summary_model or settings.llm_model
    return make_chat_model(settings.model_copy(update={"llm_model": model}))


async def model_summary(
    model: BaseChatModel, messages: Sequence[str], changes: Sequence[str]
) -> str:
    """Ask `model` for the summary; raises whatever the provider raises."""
    asked = "\n".join(f"- {one_line(m, 300)}" for m in messages[-12:])
    did = ", ".join(changes) if changes else "nothing"
    reply = await model.ainvoke(
        [
            SystemMessage(content=SUMMARY_INSTRUCTIONS),
            HumanMessage(content=f"The user asked:\n{asked}\nThe workspace changed: {did}."),
        ]
    )
    content = reply.content
    text = (
        content
        if isinstance(content, str)
        else "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content)
    )
    line = one_line(text.strip().strip('"“”'))
    if not line:
        raise ValueError("the summary model answered nothing")
    return line
