"""The repository explains and tests itself: no tracked file cites or reads a file
outside it. The documents HAICO was first built against lived in a directory beside
the clone; a clone with nothing beside it must still read and test whole, so their
substance is in `docs/api.md` and the AHP data the tests need is vendored under
`tests/ahp/vendor/`."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# Built from pieces, so that this file does not match itself.
_SHARED = "shared"
OUTSIDE = re.compile(
    "|".join(
        [
            re.escape("../" + _SHARED),
            re.escape(_SHARED + "/docs"),
            re.escape(_SHARED + "/ahp"),
            # the same directory named in code, as a quoted path component
            "[\"']" + _SHARED + "[\"']\\s*/",
        ]
    )
)


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [ROOT / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_points_outside_the_repository() -> None:
    files = [p for p in tracked_files() if p.is_file()]
    assert Path(__file__).resolve() in files  # the listing really is this repository's
    hits = []
    for path in files:
        text = path.read_bytes().decode("utf-8", "replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:120]}")
    assert not hits, "files that point outside the repository:\n" + "\n".join(hits)
