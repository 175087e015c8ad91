"""Where the files the server needs beside its code are: the built studio and the
migrations.

An installed wheel carries both inside the package (`haico/studio`, `haico/migrations`,
put there by backend/setup.py). A clone (an editable install, the Docker image) has
them beside the package, as it always had: `frontend/out` and `backend/alembic`. The
package's own copy wins when it is there.
"""

from __future__ import annotations

from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
# backend/ in a clone; site-packages/ in an installed wheel (where nothing is beside it).
_BESIDE = PACKAGE.parent


def studio_dir() -> Path:
    """The static export of the studio to serve at `/` (it may not exist: a clone
    whose studio was never built)."""
    packaged = PACKAGE / "studio"
    if (packaged / "index.html").is_file():
        return packaged
    return _BESIDE.parent / "frontend" / "out"


def migrations_dir() -> Path:
    """Alembic's script directory: env.py, script.py.mako and versions/."""
    packaged = PACKAGE / "migrations"
    if (packaged / "env.py").is_file():
        return packaged
    return _BESIDE / "alembic"


def alembic_ini() -> Path | None:
    """A clone's alembic.ini (how `alembic revision` names files); an installed wheel
    needs none: the script directory and the URL are set in code."""
    ini = _BESIDE / "alembic.ini"
    return ini if ini.is_file() else None
