"""Conversation titles: a new conversation is named after its objective or its first
message until the researcher renames it.

A thread still carries the default title ("New conversation") until one of these
names it, whichever comes first:

- an objective, when the thread is created with one or when it is set (by hand or by
  the agent's tool: `workspace.set_objective_in` calls `title_from_objective`);
- the first turn's message, written with the turn's close (`from_message`, a
  conditional update that leaves any other title alone).

Both derivations are deterministic (`derive`). With a real model (`HAICO_LLM` other
than `offline`) the turn's close also starts `Retitler.after_turn`: off the turn's
path, after it ended, one short call to the summary model (`HAICO_SUMMARY_MODEL`, the
chat model when unset) proposes a better title, and it replaces
the derived one only if that is still the thread's title (compare and set), so a
rename made meanwhile always wins. A failed or slow call leaves the derived title;
the turn never waits for it.
"""

from __future__ import annotations

import asyncio
import logging
import re

from langchain_core.messages import HumanMessage, SystemMessage

from haico.agent.models import split_parts
from haico.agent.summaries import make_summary_model
from haico.config import Settings
from haico.db.engine import Database
from haico.db.models import Conversation
from haico.db.repositories import threads as repo
from haico.db.repositories import titles as titles_repo
from haico.domain import TITLE_CHARS
from haico.events import log as action_log
from haico.process import background

log = logging.getLogger("haico.titles")

DEFAULT_TITLE = "New conversation"
IMPORTED = " (imported)"
MAX_CHARS = 60
MODEL_SECONDS = 30.0

# A command's keyword is not part of a title ("todo: call Ann" → "call Ann").
_KEYWORD = re.compile(
    r"^\s*(?:objective|title|write|replace\s+document|prefer|add\s+todo|todo|subtodo)\s*:\s*",
    re.IGNORECASE,
)

_PROMPT = (
    "You name conversations. Answer with a title of at most six words for the "
    "conversation below: no quotes, no final full stop, nothing else."
)


def derive(text: str | None) -> str | None:
    """A short title from an objective or a message: its first line (or the first
    `;` part of it), without a command keyword, at most MAX_CHARS characters cut at a
    word; None when nothing is left."""
    for line in (text or "").splitlines():
        part = _KEYWORD.sub("", split_parts(line)[0])
        words = " ".join(part.split())
        if words:
            return clip(words)
    return None


def clip(words: str) -> str:
    if len(words) <= MAX_CHARS:
        return words
    cut = words[: MAX_CHARS - 1]
    if " " in cut[MAX_CHARS // 2 :]:
        cut = cut[: cut.rfind(" ")]
    return cut.rstrip(" ,;:.-") + "…"


def imported_title(title: str) -> str:
    """An imported thread's title: its own, marked so that the copy can be told from
    the original (once: importing an import does not mark it twice)."""
    if title.endswith(IMPORTED):
        return title
    return title[: TITLE_CHARS - len(IMPORTED)] + IMPORTED


def title_from_objective(conv: Conversation) -> bool:
    """Name a default-titled thread after its (new) objective; whether it did."""
    if conv.title != DEFAULT_TITLE:
        return False
    title = derive(conv.objective)
    if title is None:
        return False
    conv.title = title
    return True


def from_message(message: str) -> tuple[str, str] | None:
    """(the default title, the title) that names a still default-titled thread after a
    turn's message, for the turn's close (`threads.turn_finished`); None: nothing to
    name it after."""
    title = derive(message)
    return None if title is None else (DEFAULT_TITLE, title)


def _clean(answer: str) -> str | None:
    for line in answer.splitlines():
        words = " ".join(line.strip().strip("\"'“”‘’*#").split()).rstrip(".")
        if words:
            return clip(words)
    return None


class Retitler:
    """The real model's titles, written in background tasks this object owns."""

    def __init__(self, settings: Settings, db: Database) -> None:
        self.enabled = settings.llm != "offline"
        self.settings = settings
        self.db = db
        self.tasks: set[asyncio.Task[None]] = set()

    def after_turn(self, *, thread_id: str, turn_index: int, message: str, reply: str) -> None:
        """Start the title call after a thread's first turn ended (never awaited by the
        turn): one model call per thread at most."""
        if not self.enabled or turn_index != 1 or derive(message) is None:
            return
        task = asyncio.create_task(
            self._retitle(thread_id, message, reply), name=f"title {thread_id}"
        )
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    async def close(self) -> None:
        for task in list(self.tasks):
            await background.stop(task)

    async def _retitle(self, thread_id: str, message: str, reply: str) -> None:
        try:
            async with self.db.read() as s:
                conv = await repo.get_thread(s, thread_id)
                if conv is None:
                    return
                current, objective = conv.title, conv.objective
            # Only a title derived by `derive` is the model's to replace: that of this
            # turn's message, or of the objective.
            if current not in {derive(message), derive(objective)}:
                return
            proposed = await asyncio.wait_for(
                self._ask(objective, message, reply), timeout=MODEL_SECONDS
            )
            if proposed is None or proposed == current:
                return
            async with self.db.transaction() as s:
                changed = await titles_repo.set_title_if(
                    s, thread_id, expected=current, title=proposed
                )
                if changed is not None:
                    await action_log.append_catalogue(
                        s,
                        changed.root_thread_id,
                        thread_id,
                        "renamed",
                        title=proposed,
                        name=changed.name,
                    )
        except asyncio.CancelledError:
            raise
        except Exception:
            log.warning("no model title for %s; the derived one stays", thread_id, exc_info=True)

    async def _ask(self, objective: str | None, message: str, reply: str) -> str | None:
        # The summary model (`HAICO_SUMMARY_MODEL`, else the chat model) names things:
        # a title is a summary of the first exchange, not a turn of the chat.
        model = make_summary_model(self.settings)
        if model is None:
            return None
        about = f"Objective: {objective}\n" if objective else ""
        answer = await model.ainvoke(
            [
                SystemMessage(content=_PROMPT),
                HumanMessage(
                    content=f"{about}First message: {message[:2000]}\nReply: {reply[:1000]}"
                ),
            ]
        )
        text = answer.content if isinstance(answer.content, str) else str(answer.content)
        return _clean(text)
