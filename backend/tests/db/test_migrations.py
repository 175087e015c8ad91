"""Alembic migrations and the ORM describe the same schema; `haico migrate` brings an
empty database to it (the CLI as a whole: `tests/cli`)."""

from __future__ import annotations

import asyncio
import uuid
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import inspect, text
from sqlalchemy.ext.asyncio import create_async_engine

from haico.cli import schema as cli_schema
from haico.cli.schema import migrate
from haico.config import Settings
from haico.db.base import Base
from haico.db.migrations import include_object
from tests.conftest import PG_ADMIN_URL, _admin


@pytest.fixture
async def empty_db_url(backend: str, tmp_path: Path) -> Any:
    if backend == "sqlite":
        yield None
        return
    name = f"test_mig_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}"')
    yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def test_migrations_match_orm(empty_db_url: str | None, tmp_path: Path) -> None:
    settings = Settings(database_url=empty_db_url, data_dir=tmp_path / "d")
    await asyncio.to_thread(migrate, settings)
    engine = create_async_engine(settings.sql_url)

    def diff(conn: Any) -> list[Any]:
        ctx = MigrationContext.configure(
            conn, opts={"compare_type": True, "include_object": include_object}
        )
        return list(compare_metadata(ctx, Base.metadata))

    def tables(conn: Any) -> set[str]:
        return set(inspect(conn).get_table_names())

    async with engine.connect() as conn:
        differences = await conn.run_sync(diff)
        names = await conn.run_sync(tables)
    await engine.dispose()
    assert differences == []
    assert set(Base.metadata.tables) <= names
    # Running it again is a no-op.
    await asyncio.to_thread(migrate, settings)


async def test_big_columns_use_lz4_where_the_server_has_it(
    empty_db_url: str | None, tmp_path: Path
) -> None:
    """PostgreSQL: the document, body, search and snapshot columns compress with lz4
    when the server was built with it (and keep the default when not); SQLite has no
    such setting and migrates all the same."""
    settings = Settings(database_url=empty_db_url, data_dir=tmp_path / "d")
    await asyncio.to_thread(migrate, settings)
    if empty_db_url is None:
        assert cli_schema.at_head(settings)
        return
    engine = create_async_engine(settings.sql_url)
    async with engine.connect() as conn:
        methods = (
            await conn.execute(
                text("SELECT enumvals FROM pg_settings WHERE name = 'default_toast_compression'")
            )
        ).scalar()
        rows = await conn.execute(
            text(
                "SELECT c.relname, a.attname, a.attcompression::text FROM pg_attribute a "
                "JOIN pg_class c ON c.oid = a.attrelid WHERE (c.relname, a.attname) IN "
                "(('documents', 'content'), ('document_bodies', 'content'), "
                "('search_entries', 'content'), ('workspace_snapshots', 'todos'))"
            )
        )
        found = {(r[0], r[1]): r[2] for r in rows}
    await engine.dispose()
    expected = "l" if methods is not None and "lz4" in methods else ""
    assert len(found) == 4 and set(found.values()) == {expected}, found


async def test_the_quick_head_check_agrees_with_alembic(
    empty_db_url: str | None, tmp_path: Path
) -> None:
    """`haico` commands skip alembic when the database is at head, found without it:
    the head read off the revision files is alembic's, an empty database and one a
    revision behind are not at head (so alembic runs and upgrades them), a migrated
    one is."""
    from alembic.script import ScriptDirectory

    from alembic import command
    from haico.cli import schema as cli_schema
    from haico.cli.schema import alembic_config

    settings = Settings(database_url=empty_db_url, data_dir=tmp_path / "d")
    config: Any = alembic_config(settings)
    head = ScriptDirectory.from_config(config).get_current_head()
    assert cli_schema.head_revision() == head
    assert not cli_schema.at_head(settings)
    await asyncio.to_thread(migrate, settings)
    assert cli_schema.current_revision(settings) == head and cli_schema.at_head(settings)

    previous = ScriptDirectory.from_config(config).get_revision(head).down_revision
    await asyncio.to_thread(command.downgrade, config, str(previous))
    assert cli_schema.current_revision(settings) == previous
    assert not cli_schema.at_head(settings)
    await asyncio.to_thread(migrate, settings)
    assert cli_schema.at_head(settings)


def test_the_quick_head_check_refuses_what_it_cannot_read(tmp_path: Path) -> None:
    from haico.cli import schema as cli_schema

    (tmp_path / "0001_a.py").write_text('revision: str = "a"\ndown_revision = None\n')
    (tmp_path / "0002_b.py").write_text('revision: str = "b"\ndown_revision: str = "a"\n')
    assert cli_schema.head_revision(tmp_path) == "b"
    (tmp_path / "0003_c.py").write_text('revision: str = "c"\ndown_revision: str = "a"\n')
    assert cli_schema.head_revision(tmp_path) is None  # two heads
    (tmp_path / "0003_c.py").write_text("nothing here\n")
    assert cli_schema.head_revision(tmp_path) is None


async def test_create_all_compresses_like_the_migrations(tmp_path: Path) -> None:
    """PostgreSQL: a schema made by `create_all` (the tests', the benchmarks') stores
    every column with the compression the migrated schema has (lz4 on the big ones where
    the server has it), so a benchmark measures the storage a server runs."""
    made = {}
    for how in ("migrated", "created"):
        name = f"test_cmp_{how}_{uuid.uuid4().hex[:10]}"
        await _admin(f'CREATE DATABASE "{name}"')
        url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
        settings = Settings(database_url=url, data_dir=tmp_path / how)
        engine = create_async_engine(settings.sql_url)
        try:
            if how == "migrated":
                await asyncio.to_thread(migrate, settings)
            else:
                async with engine.begin() as conn:
                    await conn.run_sync(Base.metadata.create_all)
            async with engine.connect() as conn:
                rows = await conn.execute(
                    text(
                        "SELECT c.relname, a.attname, a.attcompression::text FROM pg_attribute a "
                        "JOIN pg_class c ON c.oid = a.attrelid "
                        "JOIN pg_namespace n ON n.oid = c.relnamespace "
                        "WHERE n.nspname = 'public' AND c.relkind = 'r' AND a.attnum > 0 "
                        "AND NOT a.attisdropped AND c.relname = ANY(:tables)"
                    ),
                    {"tables": list(Base.metadata.tables)},
                )
                made[how] = {(r[0], r[1]): r[2] for r in rows}
        finally:
            await engine.dispose()
            await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    assert made["created"] == made["migrated"]
    assert made["created"][("documents", "content")] in {"l", ""}
    assert len(made["created"]) > 100
