"""Reading an import's body (`POST /api/conversations/import`) a piece at a time.

A family document can be ~100 MB, most of it in its `nodes`. Parsed and validated in
one call, it holds the interpreter for seconds, and a worker thread does not help: no
other thread (the event loop's neither) runs while one C call holds the interpreter
lock. So the body is split at the top level by hand and each member, and each node,
is parsed by its own call (`json.JSONDecoder.raw_decode`) and validated by its own
call: many short steps, between which the event loop's thread gets its turn.
"""

from __future__ import annotations

import json
import re
from typing import Any, NoReturn

from pydantic import ValidationError

from haico.domain import is_valid_text
from haico.errors import InvalidInput
from haico.schemas.export import ExportNode, FamilyExport

_SPACE = re.compile(r"[ \t\n\r]*")


def _no_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


_DECODER = json.JSONDecoder(parse_constant=_no_constant)


def _skip(text: str, i: int) -> int:
    end: int = _SPACE.match(text, i).end()  # type: ignore[union-attr]
    return end


def _expect(text: str, i: int, *allowed: str) -> tuple[str, int]:
    """The punctuation at `i` (one of `allowed`) and the position after it and the
    whitespace that follows."""
    found = text[i : i + 1]
    if found not in allowed:
        raise ValueError(f"expected {' or '.join(allowed)} at character {i}")
    return found, _skip(text, i + 1)


def split_document(text: str) -> tuple[dict[str, Any], list[Any] | None]:
    """The top-level object's members other than `nodes` (each parsed whole), and the
    elements of `nodes` (each parsed on its own); None when there is no `nodes` list."""
    head: dict[str, Any] = {}
    nodes: list[Any] | None = None
    _, i = _expect(text, _skip(text, 0), "{")
    closing = text[i : i + 1] == "}"
    if closing:
        i += 1
    while not closing:
        key, i = _DECODER.raw_decode(text, i)
        if not isinstance(key, str):
            raise ValueError(f"expected a member name at character {i}")
        _, i = _expect(text, _skip(text, i), ":")
        if key == "nodes" and text[i : i + 1] == "[":
            nodes, i = _array(text, i)
        else:
            head[key], i = _DECODER.raw_decode(text, i)
        mark, i = _expect(text, _skip(text, i), ",", "}")
        closing = mark == "}"
    if _skip(text, i) != len(text):
        raise ValueError(f"extra data at character {i}")
    return head, nodes


def _array(text: str, i: int) -> tuple[list[Any], int]:
    """The array starting at `i`, each element parsed by its own call."""
    items: list[Any] = []
    _, i = _expect(text, i, "[")
    if text[i : i + 1] == "]":
        return items, i + 1
    while True:
        item, i = _DECODER.raw_decode(text, i)
        items.append(item)
        mark, i = _expect(text, _skip(text, i), ",", "]")
        if mark == "]":
            return items, i


def _invalid(exc: ValidationError, prefix: str = "") -> InvalidInput:
    """A validation error as a 422: where and why, never the rejected value."""
    parts = []
    for err in exc.errors()[:5]:
        where = ".".join(str(p) for p in err.get("loc", ()))
        parts.append(f"{prefix}{where}: {err.get('msg', 'invalid')}")
    more = exc.error_count() - len(parts)
    return InvalidInput("; ".join(parts) + (f" (and {more} more)" if more > 0 else ""))


UNICODE = "a text is not valid Unicode (a lone surrogate)"


def read_document(body: bytes) -> FamilyExport:
    """The family document of an import's body, validated (blocking: run it in a
    worker thread); 422 on the first problem, naming where but never the value."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput("body: not valid UTF-8") from None
    try:
        head, nodes = split_document(text)
    except ValueError as exc:  # json.JSONDecodeError too
        reason = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise InvalidInput(f"body: not a JSON document ({reason})") from None
    if nodes is None:
        raise InvalidInput("nodes: expected a list of nodes")
    if not is_valid_text(head):
        raise InvalidInput(f"body: {UNICODE}")
    try:
        doc = FamilyExport.model_validate({**head, "nodes": []})
    except ValidationError as exc:
        raise _invalid(exc) from None
    for i, raw in enumerate(nodes):
        if not is_valid_text(raw):
            raise InvalidInput(f"nodes.{i}: {UNICODE}")
        try:
            doc.nodes.append(ExportNode.model_validate(raw))
        except ValidationError as exc:
            raise _invalid(exc, f"nodes.{i}.") from None
    return doc
