"""The package's layout stays a map: a small root, features in packages, tests that
mirror them, and every package under an import contract.

No database: these read the source tree (`haico/`, `tests/`, `.importlinter`)."""

from __future__ import annotations

import configparser
import re
from pathlib import Path

BACKEND = Path(__file__).resolve().parents[1]
HAICO = BACKEND / "haico"
TESTS = BACKEND / "tests"
# The most modules the root may hold (today: main, config, domain, errors).
ROOT_MODULES_AT_MOST = 8
# Test folders that mirror no package: they test the deployment as a whole.
CROSS_CUTTING = {"deploy", "compose"}


def _packages(folder: Path) -> set[str]:
    return {p.parent.name for p in folder.glob("*/__init__.py")}


def test_the_root_holds_few_modules_and_no_prefixed_ones() -> None:
    root = sorted(p.stem for p in HAICO.glob("*.py") if p.name != "__init__.py")
    assert len(root) <= ROOT_MODULES_AT_MOST, root
    prefixed = [m for m in root if re.match(r"(cli|schemas)_", m)]
    assert prefixed == [], f"{prefixed}: put them in haico/cli/ or haico/schemas/"


def test_every_test_folder_mirrors_a_package() -> None:
    known = _packages(HAICO) | _packages(HAICO / "services") | CROSS_CUTTING
    folders = {p.name for p in TESTS.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert folders - known == set(), "test folders with no haico package of that name"


def test_every_package_is_named_by_an_import_contract() -> None:
    config = configparser.ConfigParser()
    config.read(BACKEND / ".importlinter")
    named = {
        name
        for section in config.sections()
        if section.startswith("importlinter:contract:")
        for key in ("layers", "source_modules", "forbidden_modules", "ancestors")
        for name in re.findall(r"haico(?:\.\w+)+", config[section].get(key, ""))
    }
    top = {".".join(n.split(".")[:2]) for n in named}
    packages = {f"haico.{p}" for p in _packages(HAICO)}
    assert packages - top == set(), "packages no contract names"
    root = {f"haico.{p.stem}" for p in HAICO.glob("*.py")}
    modules = {n for n in named - root if not HAICO.joinpath(*n.split(".")[1:]).is_dir()}
    assert modules == set(), "contracts name packages (or a root module), not modules in them"
