"""`make run AUTH=token` serves in token mode (sharing needs it), `make run` keeps auth
off, and `make user NAME=…` creates a user in the data directory `make run` serves."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def serve_line(*args: str) -> str:
    assert shutil.which("make"), "make is needed to run HAICO from a clone"
    out = subprocess.run(
        ["make", "-n", "--no-print-directory", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return next(
        line for line in out.splitlines() if "haico serve" in line or "users create" in line
    )


def test_make_run_starts_in_token_mode_when_asked() -> None:
    assert "HAICO_AUTH=token " in serve_line("run", "AUTH=token")
    assert "HAICO_AUTH" not in serve_line("run")


def test_make_user_creates_a_user_where_make_run_serves() -> None:
    line = serve_line("user", "NAME=ada")
    assert line.startswith("cd backend && ") and line.endswith("haico users create ada")


def test_the_readme_says_how_to_share() -> None:
    readme = (ROOT / "README.md").read_text()
    assert "make run AUTH=token" in readme and "make user NAME=" in readme
