"""Whether the SQL schema is at head already, found without loading alembic.

Every `haico` command migrates first; loading alembic and its environment to learn
that there is nothing to do took about half of a short command's second. Here the
head is read off the revision files (the one revision no other names as its
`down_revision`) and the database's `alembic_version` row with the plain driver.
Anything unexpected (no such table, several heads, a file it cannot parse, a driver
error) answers False, and the caller runs alembic as before.
"""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from app.config import Settings

VERSIONS = Path(__file__).resolve().parent.parent / "alembic" / "versions"
_REVISION = re.compile(r'^revision(?:\s*:[^=]*)?=\s*"([^"]+)"', re.MULTILINE)
_DOWN = re.compile(r'^down_revision(?:\s*:[^=]*)?=\s*"([^"]+)"', re.MULTILINE)


def head_revision(versions: Path = VERSIONS) -> str | None:
    """The one head of the revision files; None when there is not exactly one."""
    revisions: set[str] = set()
    downs: set[str] = set()
    for path in versions.glob("*.py"):
        text = path.read_text(encoding="utf-8")
        found = _REVISION.search(text)
        if found is None:
            return None
        revisions.add(found.group(1))
        downs.update(_DOWN.findall(text))
    heads = revisions - downs
    return heads.pop() if len(heads) == 1 else None


def current_revision(settings: Settings) -> str | None:
    """The database's `alembic_version`, or None (no database, no table, an error)."""
    query = "SELECT version_num FROM alembic_version"
    try:
        if settings.is_postgres:
            import psycopg

            with psycopg.connect(settings.checkpoint_url, autocommit=True) as conn:
                rows = conn.execute(query).fetchall()
        else:
            path = Path(settings.sql_url.split("///", 1)[1])
            if not path.exists():
                return None
            with sqlite3.connect(f"{path.as_uri()}?mode=ro", uri=True) as conn:
                rows = conn.execute(query).fetchall()
    except Exception:
        return None
    return str(rows[0][0]) if len(rows) == 1 else None


def at_head(settings: Settings) -> bool:
    head = head_revision()
    return head is not None and current_revision(settings) == head
