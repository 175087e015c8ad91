"""The import document, fuzzed: a family's own export with a part changed (a value
replaced by any JSON value or by text with any code point, lone surrogates included; a
key removed; an item repeated; a list grown to 1,001 items or a text to 900,001
characters, past every limit a write has), or any JSON at all. Every answer is a 2xx or
a 4xx, never a 5xx; the families made before (the exported one, and every copy an
earlier example imported) are unchanged; and a copy that was accepted keeps every limit
a write has (items, document length) and exports a document that imports again.

A 5xx, a dropped connection or a failed round trip is collected with what was changed,
not raised, so one run lists every failure. CI draws HAICO_FUZZ_IMPORT_EXAMPLES
(default 50) documents per database; `make test-long` 300.
"""

from __future__ import annotations

import copy
import json
import os
from typing import Any

import httpx
from hypothesis import HealthCheck, example, given
from hypothesis import settings as hypothesis_settings
from hypothesis import strategies as st

from haico.config import Settings
from tests.api.test_fuzz_text import TEXT, exported, family, send
from tests.api.test_openapi_contract import threaded_server

EXAMPLES = int(os.environ.get("HAICO_FUZZ_IMPORT_EXAMPLES", "50"))
IMPORT = "/api/conversations/import"

Path = tuple[str | int, ...]

SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    TEXT,
)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(TEXT, inner, max_size=3)),
    max_leaves=6,
)


def parts(doc: Any, at: Path = ()) -> list[Path]:
    """Every place in a JSON document, the document itself included."""
    found = [at]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += parts(value, (*at, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            found += parts(value, (*at, i))
    return found


def grown(part: Any) -> Any:
    """A list past every item limit a write has (1,000), a text past the longest
    (a document's 900,000 characters); anything else as it is."""
    if isinstance(part, list) and part:
        return [copy.deepcopy(part[i % len(part)]) for i in range(1_001)]
    if isinstance(part, str):
        return (part or "x") * (900_001 // max(1, len(part)) + 1)
    return part


def surrogates(value: Any) -> bool:
    """Whether a JSON value holds a lone surrogate (in a key or a text)."""
    return any(0xD800 <= ord(ch) <= 0xDFFF for ch in json.dumps(value, ensure_ascii=False))


def beyond_limits(c: httpx.Client, doc: dict[str, Any], settings: Settings) -> str:
    """Which write limit an imported family's threads pass, read from their workspaces
    ('' for none)."""
    for thread in doc.get("threads", []):
        r = c.get(f"/api/conversations/{thread['thread_id']}/workspace")
        if r.status_code != 200:
            continue
        ws = r.json()
        for items in ("preferences", "todos"):
            if len(ws.get(items) or []) > settings.max_items:
                return f"{len(ws[items])} {items}"
        content = (ws.get("document") or {}).get("content") or ""
        if len(content) > settings.max_document_chars:
            return f"a document of {len(content)} characters"
    return ""


def changed(doc: Any, at: Path, how: str, value: Any) -> Any:
    """`doc` with the part at `at` replaced by `value`, removed, grown past its limit,
    or repeated in its list (or as a pair)."""
    if not at:
        return value if how == "replace" else doc
    out = copy.deepcopy(doc)
    holder = out
    for step in at[:-1]:
        holder = holder[step]
    last = at[-1]
    if how == "replace":
        holder[last] = value
    elif how == "remove":
        del holder[last]
    elif how == "grow":
        holder[last] = grown(holder[last])
    elif isinstance(holder, list):
        holder.insert(int(last), copy.deepcopy(holder[int(last)]))
    else:
        holder[last] = [holder[last], holder[last]]
    return out


def test_import_documents_never_get_a_server_error(settings: Settings) -> None:
    server_errors: list[str] = []
    answered: dict[int, int] = {}
    imported: dict[str, dict[str, Any]] = {}
    with threaded_server(settings) as base, httpx.Client(base_url=base, timeout=120) as c:
        source, _ = family(c, "exported")
        before = exported(c, source)
        document = before
        places = parts(document)

        @hypothesis_settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        # The limits a probe found imports to skip, and its lone surrogate, every run.
        @example(at=("nodes", 1, "workspace", "todos"), how="grow", value=None)
        @example(at=("threads", 0, "workspace", "todos"), how="grow", value=None)
        @example(at=("threads", 0, "workspace", "document", "content"), how="grow", value=None)
        @example(at=("nodes", 1, "workspace", "objective"), how="replace", value="\ud800 lone")
        @given(
            at=st.sampled_from(places),
            how=st.sampled_from(["replace", "remove", "repeat", "grow"]),
            value=VALUE,
        )
        def probe(at: Path, how: str, value: Any) -> None:
            body = changed(document, at, how, value)
            r = send(c, "POST", IMPORT, body)
            status = r if isinstance(r, int) else r.status_code
            answered[status] = answered.get(status, 0) + 1
            kind = "lone surrogate" if how == "replace" and surrogates(value) else how
            if status >= 500:
                server_errors.append(f"{status} ({kind}) {how} {at}: {ascii(value)[:60]}")
            elif status == 201 and not isinstance(r, int):
                tid = r.json()["thread_id"]
                imported[tid] = exported(c, tid)
                over = beyond_limits(c, imported[tid], settings)
                if over:
                    server_errors.append(f"201 over a limit ({over}) {how} {at}")
                # What was accepted exports a document that imports back.
                again = send(c, "POST", IMPORT, imported[tid])
                if isinstance(again, int) or again.status_code != 201:
                    code = again if isinstance(again, int) else again.status_code
                    server_errors.append(f"round trip {code} ({kind}) {how} {at}")
            assert exported(c, source) == before, (how, at)

        probe()
        # The unchanged document imports (the walk starts from a valid one).
        r = send(c, "POST", IMPORT, json.loads(json.dumps(document)))
        assert not isinstance(r, int) and r.status_code == 201, r
        for tid, was in imported.items():
            assert exported(c, tid) == was, tid
    print(f"\n[import fuzz] {dict(sorted(answered.items()))}")
    assert not server_errors, "\n".join(server_errors[:30])
