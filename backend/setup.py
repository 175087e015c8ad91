"""The wheel's one build step beyond pyproject.toml: the built studio and the migrations
go inside the package, so that an installed HAICO needs no clone beside it.

`make wheel` runs it (through `pip wheel`). For a regular (non-editable) build,
`build_py` copies
  ../frontend/out  -> haico/studio      (the static export; source maps left out)
  alembic          -> haico/migrations  (env.py, script.py.mako, versions/)
and refuses to build when the studio's index.html is missing: a wheel without its
studio would install and serve, and nobody would notice until they opened `/`.

An editable install (`pip install -e backend`, `make install`, the Dockerfile) copies
nothing: the app then finds both beside the package, as in a clone (`haico.paths`).
Without this file (a Docker stage copies only pyproject.toml) setuptools builds from
pyproject.toml alone, which is all an editable install needs.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.errors import SetupError

BACKEND = Path(__file__).resolve().parent
STUDIO = BACKEND.parent / "frontend" / "out"
MIGRATIONS = BACKEND / "alembic"
# Never shipped: source maps (they would double the studio's size and publish the
# sources), caches, and anything a developer left in the build folders.
LEFT_OUT = shutil.ignore_patterns("*.map", "__pycache__", "*.pyc", "node_modules", ".DS_Store")


class BuildWithStudio(build_py):
    def run(self) -> None:
        super().run()
        if self.editable_mode:
            return
        if not (STUDIO / "index.html").is_file():
            raise SetupError(
                f"the studio is not built ({STUDIO / 'index.html'} is missing): "
                "run `make studio` (Node.js 20+) or `make wheel`, which builds it first"
            )
        package = Path(self.build_lib) / "haico"
        for source, name in ((STUDIO, "studio"), (MIGRATIONS, "migrations")):
            target = package / name
            shutil.rmtree(target, ignore_errors=True)  # nothing stale from a last build
            shutil.copytree(source, target, ignore=LEFT_OUT)


setup(cmdclass={"build_py": BuildWithStudio})
