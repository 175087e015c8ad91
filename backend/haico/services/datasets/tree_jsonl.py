"""Tree JSONL (OpenAssistant's message-tree shape): one message a line, a prompter
message for each node's user message and an assistant message for its reply.

`message_id` is `<node id>/prompter` or `<node id>/assistant`; a prompter message's
`parent_id` is the parent node's assistant message (null for a root-level node), an
assistant message's is its own prompter message. `codes` names the codes the visible
codings applied to that message: a span of the user message codes the prompter
message, a span of the reply the assistant message, a whole-step coding both.
Messages come family by family, parents before children.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import orjson

from haico.db.models import Code
from haico.domain import NodeId
from haico.services.datasets.material import FamilyMaterial, Material


def _codes_by_message(fm: FamilyMaterial, codes: dict[int, Code]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for c in fm.codings:
        node = NodeId.format(c.thread_id, c.turn_index)
        name = codes[c.code_id].name if c.code_id in codes else str(c.code_id)
        roles = (
            ["prompter", "assistant"]
            if c.field is None
            else (["prompter"] if c.field == "user_message" else ["assistant"])
        )
        for role in roles:
            held = out.setdefault(f"{node}/{role}", [])
            if name not in held:
                held.append(name)
    return out


def messages(material: Material) -> Iterator[dict[str, Any]]:
    for fm in material.families:
        coded = _codes_by_message(fm, material.codes)
        extra: dict[str, Any] = {}
        if fm.tag.participant is not None:
            extra = {"participant": fm.tag.participant, "condition": fm.tag.condition}
        for thread_id, path in fm.paths:
            for node in fm.own_nodes(thread_id, path):
                user, reply = fm.texts.get((node.thread_id, node.turn), ("", ""))
                parent = fm.family.parent(node)
                parent_id = f"{parent}/assistant" if parent in fm.family.nodes else None
                for role, text, pid in (
                    ("prompter", user, parent_id),
                    ("assistant", reply, f"{node}/prompter"),
                ):
                    mid = f"{node}/{role}"
                    yield {
                        "message_id": mid,
                        "parent_id": pid,
                        "role": role,
                        "text": text,
                        "node_id": str(node),
                        "thread_id": node.thread_id,
                        **extra,
                        "codes": coded.get(mid, []),
                    }


def lines(material: Material) -> Iterator[bytes]:
    for m in messages(material):
        yield orjson.dumps(m) + b"\n"
