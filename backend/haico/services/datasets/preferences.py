"""Preference JSONL: one line per pairwise judgment that prefers a side (ties are
left out), ready for preference tuning (TRL's conversational format).

`prompt` is the path up to the fork: every step above the two siblings as a user and
an assistant message. When both siblings answer the same user message, that message
closes the prompt and `chosen` / `rejected` are the two replies; otherwise each side
is its user message and its reply. `criterion` and `judge` come with it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from haico.domain import NodeId
from haico.services.datasets.material import FamilyMaterial, Material


def _turns(fm: FamilyMaterial, node: NodeId) -> tuple[str, str]:
    return fm.texts.get((node.thread_id, node.turn), ("", ""))


def _prompt(fm: FamilyMaterial, node: NodeId) -> list[dict[str, str]]:
    above = list(reversed(fm.family.ancestors(fm.family.parent(node))))
    out: list[dict[str, str]] = []
    for step in above:
        user, reply = _turns(fm, step)
        out += [{"role": "user", "content": user}, {"role": "assistant", "content": reply}]
    return out


def records(material: Material) -> Iterator[dict[str, Any]]:
    for fm in material.families:
        for j in fm.judgments:
            if j.preferred not in ("a", "b"):
                continue
            a, b = NodeId.parse(j.a), NodeId.parse(j.b)
            if a is None or b is None or a not in fm.family.nodes or b not in fm.family.nodes:
                continue  # a side was pruned since
            win, lose = (a, b) if j.preferred == "a" else (b, a)
            prompt = _prompt(fm, win)
            (wu, wr), (lu, lr) = _turns(fm, win), _turns(fm, lose)
            if wu == lu:
                prompt.append({"role": "user", "content": wu})
                chosen = [{"role": "assistant", "content": wr}]
                rejected = [{"role": "assistant", "content": lr}]
            else:
                chosen = [{"role": "user", "content": wu}, {"role": "assistant", "content": wr}]
                rejected = [{"role": "user", "content": lu}, {"role": "assistant", "content": lr}]
            record: dict[str, Any] = {
                "prompt": prompt,
                "chosen": chosen,
                "rejected": rejected,
                "criterion": j.criterion,
                "judge": j.judge,
            }
            if fm.tag.participant is not None:
                record |= {"participant": fm.tag.participant, "condition": fm.tag.condition}
            yield record


def lines(material: Material) -> Iterator[bytes]:
    for r in records(material):
        yield orjson.dumps(r) + b"\n"
