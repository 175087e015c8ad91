"""`haico check`, `haico backup FILE` and `haico restore FILE [--force]`.

`check` reads every family of the configured database and prints a JSON report
(`services.maintenance.consistency`): exit 0 when it finds no problem, 1 when it does.

`backup` and `restore` are for the embedded SQLite store, whose state is two files
in the data directory: `haico.db` (the app's tables) and `checkpoints.db` (the
transcripts). A turn writes its checkpoint before the app row that refers to it, so
the backup holds the app database's write lock (BEGIN IMMEDIATE) while it copies the
checkpointer and then the app database, both with SQLite's online backup API: no app
commit lands between the two copies, and every checkpoint an app row refers to is in
the copy. The server keeps serving reads meanwhile; its writes wait for the copy. The
copies (and `secret_key`, when there is one) go into one tar file. On PostgreSQL one
`pg_dump` covers both, so these two commands only say so.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import sqlite3
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from haico.config import Settings

if TYPE_CHECKING:
    from haico.services.maintenance.consistency import CheckReport

COMMANDS = ("check", "backup", "restore")
APP_DB, CHECKPOINT_DB, SECRET_KEY, MANIFEST = (
    "haico.db",
    "checkpoints.db",
    "secret_key",
    "manifest.json",
)
BACKUP_FORMAT = 1
# How long the backup waits for the app database's write lock (a turn's commit).
LOCK_WAIT_S = 30.0
PG_MESSAGE = (
    "HAICO is on PostgreSQL: all of its state (app tables and transcripts) is in that one "
    'database, so `pg_dump -Fc "$HAICO_DATABASE_URL" > FILE` backs it up and `pg_restore` '
    "into an empty database restores it (see docs/operations.md, Backups)"
)


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    sub.add_parser(
        "check",
        help="check every conversation family for consistency (read-only)",
        description="Read every family of the configured database and print a JSON report: "
        "families, threads and nodes checked, the problems found (each with its family "
        "root, thread, node and reason) and what is still in progress (running turns, "
        "branches being built). Exit code 0 when there is no problem, 1 when there is.",
    )
    backup_p = sub.add_parser(
        "backup",
        help="copy the SQLite databases into one file, while the server runs",
        description="Write a consistent copy of the data directory's two SQLite databases "
        "(and its secret_key) to FILE, a tar, while the server may be running. On "
        "PostgreSQL use pg_dump instead (exit code 2).",
    )
    backup_p.add_argument("file", type=Path)
    restore_p = sub.add_parser(
        "restore",
        help="put a `haico backup` file back into the data directory (server stopped)",
        description="Unpack FILE, made by `haico backup`, into the data directory. Refuses "
        "when the data directory already holds a database, unless --force. Stop the "
        "server first.",
    )
    restore_p.add_argument("file", type=Path)
    restore_p.add_argument(
        "--force", action="store_true", help="replace the databases the data directory holds"
    )


def run(settings: Settings, args: argparse.Namespace) -> int:
    if args.command == "check":
        return check(settings)
    if settings.is_postgres:
        print(f"error: {PG_MESSAGE}", file=sys.stderr)
        return 2
    if args.command == "backup":
        return backup(settings, args.file)
    return restore(settings, args.file, force=args.force)


def _error(message: str, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    return code


# ---- check ----


def check(settings: Settings) -> int:
    app_db = settings.data_dir / APP_DB
    if not settings.is_postgres and not app_db.exists():
        return _error(f"no database at {app_db.resolve()} (HAICO_DATA_DIR)", 2)
    has_checkpoints = settings.is_postgres or Path(settings.checkpoint_url).exists()
    report = asyncio.run(_check(settings, has_checkpoints))
    print(json.dumps(report.to_json(), indent=2))
    return 0 if report.ok else 1


async def _check(settings: Settings, has_checkpoints: bool) -> CheckReport:
    from haico.agent.checkpointer import CheckpointStore, open_checkpointers
    from haico.db.engine import Database
    from haico.services.maintenance import consistency

    db = Database(settings.sql_url)
    store: CheckpointStore | None = None
    try:
        if has_checkpoints:
            store = await open_checkpointers(settings, shards=1)
        return await consistency.check(db, store, max_age_seconds=settings.pending_max_age_seconds)
    finally:
        if store is not None:
            await store.close()
        await db.dispose()


# ---- backup and restore (SQLite) ----


def _online_copy(source: sqlite3.Connection, target: Path) -> None:
    copy = sqlite3.connect(target)
    try:
        source.backup(copy)
    finally:
        copy.close()


def backup(settings: Settings, target: Path) -> int:
    app_db = settings.data_dir / APP_DB
    checkpoints = Path(settings.checkpoint_url)
    if not app_db.exists():
        return _error(f"no database at {app_db.resolve()} (HAICO_DATA_DIR)")
    target = target.resolve()
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".haico-backup-", dir=target.parent) as tmp:
        copies = Path(tmp)
        lock = sqlite3.connect(app_db, timeout=LOCK_WAIT_S, isolation_level=None)
        try:
            lock.execute("BEGIN IMMEDIATE")
            try:
                if checkpoints.exists():
                    source = sqlite3.connect(checkpoints, timeout=LOCK_WAIT_S)
                    try:
                        _online_copy(source, copies / CHECKPOINT_DB)
                    finally:
                        source.close()
                # Another connection reads the last commit, which the lock keeps the
                # latest (the holder itself cannot be a backup's source: it waits on
                # its own open write transaction for ever).
                source = sqlite3.connect(app_db, timeout=LOCK_WAIT_S)
                try:
                    _online_copy(source, copies / APP_DB)
                finally:
                    source.close()
            finally:
                lock.execute("ROLLBACK")
        finally:
            lock.close()
        partial = target.with_name(target.name + ".partial")
        with tarfile.open(partial, "w") as tar:
            manifest = {"format": BACKUP_FORMAT, "created_at": time.time()}
            data = json.dumps(manifest).encode()
            info = tarfile.TarInfo(MANIFEST)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
            for name in (APP_DB, CHECKPOINT_DB):
                if (copies / name).exists():
                    tar.add(copies / name, arcname=name)
            secret = settings.data_dir / SECRET_KEY
            if secret.exists():
                tar.add(secret, arcname=SECRET_KEY)
        os.replace(partial, target)
    print(f"backed up {app_db.resolve().parent} to {target}")
    return 0


def restore(settings: Settings, source: Path, *, force: bool) -> int:
    targets = {
        APP_DB: settings.data_dir / APP_DB,
        CHECKPOINT_DB: Path(settings.checkpoint_url),
        SECRET_KEY: settings.data_dir / SECRET_KEY,
    }
    held = [p for name, p in targets.items() if name != SECRET_KEY and p.exists()]
    if held and not force:
        return _error(
            f"{held[0]} already exists; restore into an empty data directory, or pass --force "
            "(with the server stopped) to replace it"
        )
    if not source.is_file() or not tarfile.is_tarfile(source):
        return _error(f"{source} is not a `haico backup` file")
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    with tarfile.open(source, "r") as tar:
        members = {m.name: m for m in tar.getmembers() if m.isfile()}
        if MANIFEST not in members or APP_DB not in members:
            return _error(f"{source} is not a `haico backup` file")
        staged: dict[Path, Path] = {}
        for name, path in targets.items():
            member = members.get(name)
            if member is None or (name == SECRET_KEY and path.exists() and not force):
                continue
            part = path.with_name(path.name + ".restoring")
            extracted = tar.extractfile(member)
            assert extracted is not None
            part.write_bytes(extracted.read())
            staged[part] = path
    for part, path in staged.items():
        if path.suffix == ".db" and not _intact(part):
            for p in staged:
                p.unlink(missing_ok=True)
            return _error(f"the copy of {path.name} in {source} is damaged; nothing restored")
    for part, path in staged.items():
        # A replaced database must not meet the old one's write-ahead log.
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        os.replace(part, path)
    print(f"restored {', '.join(sorted(p.name for p in staged.values()))} into {settings.data_dir}")
    return 0


def _intact(path: Path) -> bool:
    conn = sqlite3.connect(path)
    try:
        return bool(conn.execute("PRAGMA quick_check").fetchone() == ("ok",))
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()
