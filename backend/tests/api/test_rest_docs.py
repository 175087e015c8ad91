"""docs/rest.md is the REST reference rendered from the OpenAPI document; it must not
drift from the routes it describes."""

from __future__ import annotations

import difflib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SCRIPT = ROOT / "scripts" / "rest_docs.py"
PAGE = ROOT / "docs" / "rest.md"


def _render() -> str:
    # A process of its own: the renderer clears HAICO_* from its environment and
    # imports the app fresh, which must not leak into this test session.
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAICO_")}
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "--stdout"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_rest_reference_matches_the_openapi_document() -> None:
    rendered = _render()
    committed = PAGE.read_text() if PAGE.exists() else ""
    if committed != rendered:
        diff = "".join(
            list(
                difflib.unified_diff(
                    committed.splitlines(keepends=True),
                    rendered.splitlines(keepends=True),
                    "docs/rest.md (committed)",
                    "docs/rest.md (rendered now)",
                )
            )[:60]
        )
        raise AssertionError(
            f"docs/rest.md differs from the OpenAPI document: run `make rest-docs`\n{diff}"
        )


def test_every_operation_is_on_the_page() -> None:
    """The renderer itself leaves nothing out: every path and method of the document,
    and every model, has its own heading."""
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        import rest_docs
    finally:
        sys.path.remove(str(SCRIPT.parent))
    from haico.config import Settings
    from haico.main import create_app

    doc = create_app(Settings(_env_file=None)).openapi()  # type: ignore[call-arg]
    page = rest_docs.render(doc)
    operations = list(rest_docs.operations(doc))
    assert len(operations) >= 20
    for method, path, _ in operations:
        assert f"### `{method} {path}`" in page
    for name in doc["components"]["schemas"]:
        assert f"\n### {name}\n" in page
