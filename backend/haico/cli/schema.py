"""`haico migrate`: the SQL schema brought to head, and the checkpointer's tables made,
under a lock that serialises replicas; what every other command runs first.

Whether the schema is at head already is found without loading alembic: loading
alembic and its environment to learn that there is nothing to do took about half of a
short command's second. Here the head is read off the revision files (the one
revision no other names as its `down_revision`) and the database's `alembic_version`
row with the plain driver. Anything unexpected (no such table, several heads, a file
it cannot parse, a driver error) answers False, and the caller runs alembic as before.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from haico.config import Settings
from haico.paths import alembic_ini, migrations_dir

COMMANDS = ("migrate",)
VERSIONS = migrations_dir() / "versions"
# The PostgreSQL advisory lock key that serialises `haico migrate` across processes and
# replicas (an arbitrary constant: "HAICO" in ASCII).
MIGRATION_LOCK_KEY = 0x484149434F


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser("migrate", help="bring the database schema up to date")


def run(settings: Settings, args: argparse.Namespace) -> int:
    migrate(settings, local_user=True)
    print("schema is up to date")
    return 0


def migrate(settings: Settings, *, local_user: bool = False) -> None:
    """Bring the SQL schema to head, then let the checkpointer create its tables, under
    the migration lock. With `local_user` and auth off, also create the local user
    there, so that several workers or replicas starting at once do not race to insert
    it (`haico migrate` and `haico serve` do)."""
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with migration_lock(settings):
        if not at_head(settings):
            from alembic import command

            command.upgrade(alembic_config(settings), "head")  # type: ignore[arg-type]
        from haico.agent.checkpointer import setup_checkpointer

        asyncio.run(setup_checkpointer(settings))
        if local_user and settings.auth == "none":
            asyncio.run(_ensure_local_user(settings))


async def _ensure_local_user(settings: Settings) -> None:
    from haico.db.engine import Database
    from haico.services.access import users

    db = Database(settings.sql_url)
    try:
        await users.ensure_local(db, name=settings.local_user_name)
    finally:
        await db.dispose()


def alembic_config(settings: Settings) -> object:
    from alembic.config import Config

    ini = alembic_ini()
    cfg = Config(str(ini) if ini else None)
    cfg.set_main_option("script_location", str(migrations_dir()))
    cfg.set_main_option("sqlalchemy.url", settings.sql_url.replace("%", "%%"))
    return cfg


@contextmanager
def migration_lock(settings: Settings) -> Iterator[None]:
    """Hold a session-level PostgreSQL advisory lock for the duration (nothing on SQLite,
    whose one file has one writer anyway). Replicas started at once migrate one after
    another; the later ones find the schema at head and do nothing."""
    if not settings.is_postgres:
        yield
        return
    import psycopg

    with psycopg.connect(settings.checkpoint_url, autocommit=True) as conn:
        # Polled, never a blocking pg_advisory_lock: a statement waiting on the lock is
        # an open transaction, and the holder's CREATE INDEX CONCURRENTLY (in the
        # checkpointer's setup) would wait for it to end: a deadlock nobody detects.
        try_lock = "SELECT pg_try_advisory_lock(%s)"
        while not _scalar(conn.execute(try_lock, (MIGRATION_LOCK_KEY,)).fetchone()):
            time.sleep(0.2)
        try:
            yield
        finally:
            conn.execute("SELECT pg_advisory_unlock(%s)", (MIGRATION_LOCK_KEY,))


def _scalar(row: tuple[object, ...] | None) -> object:
    return row[0] if row else None


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
