"""Render docs/rest.md, the REST reference, from the backend's own OpenAPI document.

    .venv/bin/python scripts/rest_docs.py           # rewrite docs/rest.md
    .venv/bin/python scripts/rest_docs.py --check   # exit 1 when docs/rest.md is stale
    .venv/bin/python scripts/rest_docs.py --stdout  # print what it would write

`make rest-docs` runs the first. `backend/tests/api/test_rest_docs.py` fails while the
committed page differs from what this renders, so a route, parameter, status or model
field cannot change without the page changing with it.

The output depends only on the OpenAPI document: operations in the document's path
order (the order the routers are included in `haico.main`), schemas sorted by name, no
dates or versions of the machine that ran it.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
BACKEND = ROOT / "backend"
TARGET = ROOT / "docs" / "rest.md"
METHODS = ("get", "post", "put", "patch", "delete")

Schema = dict[str, Any]


def openapi() -> Schema:
    """The OpenAPI document of `haico.main.create_app()` (no storage is touched: the
    lifespan does not run). HAICO_* variables of the caller are ignored, so the page
    does not depend on who renders it."""
    for name in [k for k in os.environ if k.startswith("HAICO_")]:
        del os.environ[name]
    if str(BACKEND) not in sys.path:
        sys.path.insert(0, str(BACKEND))
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HAICO_DATA_DIR"] = tmp
        try:
            from haico.config import Settings
            from haico.main import create_app

            # _env_file=None: a developer's backend/.env must not change the page.
            settings = Settings(_env_file=None)  # type: ignore[call-arg]
            doc: Schema = create_app(settings).openapi()
        finally:
            del os.environ["HAICO_DATA_DIR"]
    return doc


def _ref_name(ref: str) -> str:
    return ref.rsplit("/", 1)[-1]


def _link(name: str) -> str:
    return f"[`{name}`](#{name.lower()})"


def type_of(schema: Schema) -> str:
    """A JSON Schema fragment as a short type expression with links to the models."""
    if "$ref" in schema:
        return _link(_ref_name(schema["$ref"]))
    if "const" in schema:
        return f"`{json.dumps(schema['const'])}`"
    if "enum" in schema:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in schema["enum"])
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            parts = []
            for part in schema[key]:
                rendered = type_of(part)
                if rendered not in parts:
                    parts.append(rendered)
            joiner = " & " if key == "allOf" else " \\| "
            return joiner.join(parts)
    kind = schema.get("type")
    if isinstance(kind, list):
        return " \\| ".join(f"{k}" for k in kind)
    if kind == "array":
        items = schema.get("items")
        return f"array of {type_of(items)}" if items else "array"
    if kind == "object" or "additionalProperties" in schema:
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict) and extra:
            return f"object of {type_of(extra)}"
        return "object"
    if kind:
        fmt = schema.get("format")
        return f"{kind} ({fmt})" if fmt else str(kind)
    return "any"


CONSTRAINTS = (
    ("minLength", "min length {}"),
    ("maxLength", "max length {}"),
    ("minimum", "≥ {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "≤ {}"),
    ("exclusiveMaximum", "< {}"),
    ("minItems", "min items {}"),
    ("maxItems", "max items {}"),
)

# Every string field forbids NUL characters; saying so on each row says nothing.
NO_NUL = r"^[^\x00]*$"


def constraints(schema: Schema) -> str:
    """Limits of a field (including those of the non-null branch of an `anyOf`)."""
    found: list[str] = []
    branches = [schema, *schema.get("anyOf", [])]
    for branch in branches:
        for key, text in CONSTRAINTS:
            if key in branch:
                item = text.format(branch[key])
                if item not in found:
                    found.append(item)
        pattern = branch.get("pattern")
        if pattern and pattern != NO_NUL:
            item = f"pattern `{pattern}`"
            if item not in found:
                found.append(item)
    return ", ".join(found)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _default(schema: Schema) -> str:
    if "default" not in schema:
        return ""
    return f"`{json.dumps(schema['default'])}`"


def _anchor(method: str, path: str) -> str:
    text = f"{method} {path}".lower()
    return "".join(c for c in text.replace(" ", "-") if c.isalnum() or c in "-_")


def operations(doc: Schema) -> Iterable[tuple[str, str, Schema]]:
    for path, item in doc["paths"].items():
        for method in METHODS:
            if method in item:
                yield method.upper(), path, item[method]


def render_operation(method: str, path: str, op: Schema) -> list[str]:
    out = [f"### `{method} {path}`", ""]
    out.append(f"**{op.get('summary', '')}**" + (" (deprecated)" if op.get("deprecated") else ""))
    out.append("")
    if op.get("description"):
        out += [op["description"].strip(), ""]
    params = op.get("parameters", [])
    if params:
        out += [
            "| parameter | in | type | required | default | limits |",
            "|---|---|---|---|---|---|",
        ]
        for p in params:
            schema = p.get("schema", {})
            desc = f" — {_cell(p['description'])}" if p.get("description") else ""
            out.append(
                f"| `{p['name']}`{desc} | {p['in']} | {type_of(schema)} | "
                f"{'yes' if p.get('required') else 'no'} | {_default(schema)} | "
                f"{constraints(schema)} |"
            )
        out.append("")
    body = op.get("requestBody")
    if body:
        for media, content in sorted(body.get("content", {}).items()):
            required = "required" if body.get("required") else "optional"
            out.append(f"Request body ({media}, {required}): {type_of(content.get('schema', {}))}")
        out.append("")
    out += ["| status | meaning | body |", "|---|---|---|"]
    for status, resp in sorted(op.get("responses", {}).items()):
        bodies = []
        for media, content in sorted(resp.get("content", {}).items()):
            if "schema" in content:
                bodies.append(f"{media}: {type_of(content['schema'])}")
            elif "itemSchema" in content:
                bodies.append(f"{media}: a stream of events")
            else:
                bodies.append(media)
        shown = "; ".join(bodies) if bodies else "none"
        out.append(f"| {status} | {_cell(resp.get('description', ''))} | {shown} |")
    out.append("")
    return out


def render_schema(name: str, schema: Schema) -> list[str]:
    out = [f"### {name}", ""]
    if schema.get("description"):
        out += [schema["description"].strip(), ""]
    props: Schema = schema.get("properties", {})
    if not props:
        out += [f"Type: {type_of(schema)}.", ""]
        return out
    required = set(schema.get("required", []))
    out += ["| field | type | required | default | limits |", "|---|---|---|---|---|"]
    for field, sub in props.items():
        desc = f" — {_cell(sub['description'])}" if sub.get("description") else ""
        out.append(
            f"| `{field}`{desc} | {type_of(sub)} | {'yes' if field in required else 'no'} | "
            f"{_default(sub)} | {constraints(sub)} |"
        )
    extra = schema.get("additionalProperties")
    if extra is False:
        out += ["", "No other fields are accepted."]
    out.append("")
    return out


def render(doc: Schema) -> str:
    ops = list(operations(doc))
    schemas: Schema = doc.get("components", {}).get("schemas", {})
    out = [
        "# REST reference",
        "",
        "<!-- Generated by scripts/rest_docs.py from the backend's OpenAPI document. -->",
        "<!-- Do not edit: run `make rest-docs` (tests/api/test_rest_docs.py checks it). -->",
        "",
        (
            f"{doc['info']['title']} {doc['info']['version']}, OpenAPI {doc['openapi']}: "
            f"{len(ops)} operations and {len(schemas)} models. A running server serves the "
            "same document at `/openapi.json`. With "
            "`HAICO_AUTH=token` every operation except the health check needs "
            "`Authorization: Bearer <token>`. Errors share one body, "
            f"{_link('ErrorOut')} (`code`, `message`, `data`); a request that does not match "
            f"its schema gets 422 with {_link('ValidationErrorOut')}; every error code, with "
            "its status, is in [api.md](api.md#errors). Streams (`text/event-stream`) and "
            "their events are described in [api.md](api.md) and in "
            "[the design notes](DESIGN.md#events); `/ahp` (WebSocket, JSON-RPC) is in "
            "[api.md](api.md#the-ahp-host) and [AHP.md](AHP.md)."
        ),
        "",
        "## Operations",
        "",
        "| method | path | summary |",
        "|---|---|---|",
    ]
    for method, path, op in ops:
        out.append(
            f"| {method} | [`{path}`](#{_anchor(method, path)}) | {_cell(op.get('summary', ''))} |"
        )
    out.append("")
    tags: dict[str, list[tuple[str, str, Schema]]] = {}
    for method, path, op in ops:
        tags.setdefault((op.get("tags") or ["other"])[0], []).append((method, path, op))
    for tag, tagged in tags.items():
        out += [f"## {tag}", ""]
        for method, path, op in tagged:
            out += render_operation(method, path, op)
    out += ["## Models", ""]
    for name in sorted(schemas):
        out += render_schema(name, schemas[name])
    return "\n".join(out).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when docs/rest.md is stale")
    parser.add_argument("--stdout", action="store_true", help="print the page, write nothing")
    args = parser.parse_args(argv)
    text = render(openapi())
    if args.stdout:
        sys.stdout.write(text)
        return 0
    if args.check:
        if not TARGET.exists() or TARGET.read_text() != text:
            print("docs/rest.md is stale: run `make rest-docs`", file=sys.stderr)
            return 1
        print("docs/rest.md is up to date")
        return 0
    TARGET.write_text(text)
    print(f"wrote {TARGET.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
