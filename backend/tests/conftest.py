"""Shared fixtures: every storage test runs on SQLite and on PostgreSQL.

PostgreSQL: one fresh database per test session (`test_<hex>`), dropped at the end.
When `CI=true` a missing PostgreSQL fails the run; elsewhere its half is skipped with
a message, so a laptop without a server can still run the SQLite half.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy.ext.asyncio import create_async_engine

from haico.agent import graph as graph_module
from haico.config import Settings
from haico.db import models  # noqa: F401
from haico.db.base import Base
from haico.main import create_app
from tests.field_validators import share_field_validators

PG_ADMIN_URL = os.environ.get(
    "HAICO_TEST_PG_ADMIN_URL", "postgresql://postgres@127.0.0.1:5432/postgres"
)
# Many apps live and die in one test process, and frozen objects are never freed: no
# app of the test process freezes (a test that wants it says so).
os.environ["HAICO_GC_FREEZE"] = "false"
# Branch summaries land in the background a while after a turn (a catalogue action, a
# search hit): tests that are not about them would see them at random moments. Those
# that are set `summary_debounce_seconds` themselves.
os.environ["HAICO_SUMMARY_DEBOUNCE_SECONDS"] = "3600"
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}
# tests/compose drives a container engine and builds images: `make test-compose` runs it
# (setting HAICO_COMPOSE_SUITE), never `make pytest`.
collect_ignore = [] if os.environ.get("HAICO_COMPOSE_SUITE") == "1" else ["compose"]
# PostgreSQL looks for a deadlock after a lock wait this long (default 1 s). The races
# deadlock on purpose in some rounds, and the loser's 409 is what they assert; finding
# it sooner changes no outcome, only how long each such round waits.
DEADLOCK_TIMEOUT = "50ms"
share_field_validators()


def _asyncpg_url(url: str) -> str:
    return "postgresql+asyncpg://" + url.split("://", 1)[1]


async def _create_database(name: str, *, template: str | None = None) -> None:
    """A fresh test database (a copy of `template`, when given) whose sessions detect
    deadlocks after `DEADLOCK_TIMEOUT`."""
    copy = f' TEMPLATE "{template}"' if template else ""
    for attempt in range(50):
        try:
            await _admin(f'CREATE DATABASE "{name}"{copy}')
            break
        except Exception as exc:
            # The template's last session may still be ending (`haico migrate` has
            # just closed it): PostgreSQL copies no database someone is connected to.
            if "being accessed by other users" not in str(exc) or attempt == 49:
                raise
            await asyncio.sleep(0.1)
    await _admin(f"ALTER DATABASE \"{name}\" SET deadlock_timeout = '{DEADLOCK_TIMEOUT}'")


async def _admin(sql: str) -> None:
    import asyncpg

    conn = await asyncpg.connect(PG_ADMIN_URL.replace("postgresql+asyncpg", "postgresql"))
    try:
        await conn.execute(sql)
    finally:
        await conn.close()


@pytest.fixture(scope="session")
async def pg_url() -> AsyncIterator[str]:
    name = f"test_{uuid.uuid4().hex[:16]}"
    try:
        await _create_database(name)
    except Exception as exc:  # no server here
        if IN_CI:
            pytest.fail(f"PostgreSQL is required in CI and unreachable: {exc}")
        pytest.skip(f"PostgreSQL unreachable ({exc}); the CI run requires it")
    base = PG_ADMIN_URL.rsplit("/", 1)[0]
    url = f"{base}/{name}"
    print(f"\n[haico tests] PostgreSQL test database {name}")

    async def schema() -> None:
        engine = create_async_engine(_asyncpg_url(url))
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        await engine.dispose()

    await schema()
    yield url
    await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    if request.param == "postgres":
        # Resolved here, outside any running loop, so the session fixture can start.
        request.getfixturevalue("pg_url")
    return str(request.param)


def make_settings(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, **kw: Any
) -> Settings:
    url = None
    if backend == "postgres":
        url = request.getfixturevalue("pg_url")
    return Settings(
        database_url=url,
        data_dir=tmp_path / "data",
        local_user_name=f"local-{uuid.uuid4().hex[:8]}",
        secret_key="test-secret",
        **kw,
    )


_SQLITE_TEMPLATE = Path(tempfile.mkdtemp(prefix="haico-test-schema-")) / "schema.db"
atexit.register(shutil.rmtree, _SQLITE_TEMPLATE.parent, ignore_errors=True)


async def sqlite_schema(settings: Settings) -> None:
    """The app's tables in `settings`' SQLite file: a copy of one file made by
    `create_all` once per test process (creating them takes half a second a test)."""
    if not _SQLITE_TEMPLATE.exists():
        engine = create_async_engine(f"sqlite+aiosqlite:///{_SQLITE_TEMPLATE}")
        async with engine.begin() as conn:
            await conn.run_sync(Base.metadata.create_all)
        await engine.dispose()
    settings.data_dir.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(_SQLITE_TEMPLATE, settings.sql_url.removeprefix("sqlite+aiosqlite:///"))


@pytest.fixture
def settings_overrides() -> dict[str, Any]:
    """Override in a test module to change settings for its app."""
    return {}


@pytest.fixture
async def settings(
    backend: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    settings_overrides: dict[str, Any],
) -> Settings:
    s = make_settings(backend, tmp_path, request, **settings_overrides)
    if backend == "sqlite":
        await sqlite_schema(s)
    return s


@pytest.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    application = create_app(settings)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
        yield c


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def module_backend(request: pytest.FixtureRequest) -> str:
    """`backend`, for an app that the tests of one module share (`module_app`)."""
    if request.param == "postgres":
        request.getfixturevalue("pg_url")
    return str(request.param)


@pytest.fixture(scope="module")
def module_settings_overrides() -> dict[str, Any]:
    """Override in a test module to change settings for its shared app."""
    return {}


@pytest.fixture(scope="module")
async def module_app(
    module_backend: str,
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
    module_settings_overrides: dict[str, Any],
) -> AsyncIterator[FastAPI]:
    """One app for every test of a module on a backend: for tests that each make the
    rows they look at (fresh users, families), so that none sees another's."""
    s = make_settings(
        module_backend, tmp_path_factory.mktemp("app"), request, **module_settings_overrides
    )
    if module_backend == "sqlite":
        await sqlite_schema(s)
    application = create_app(s)
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture(scope="module")
async def module_client(module_app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=module_app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
        yield c


def _in_a_thread(work: Callable[[], Any]) -> Any:
    """Run `work` on a thread of its own: it may start event loops of its own."""
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(work).result()


def _migrate(settings: Settings) -> None:
    from haico.cli.schema import migrate

    _in_a_thread(lambda: migrate(settings))


@pytest.fixture(scope="session")
def sqlite_migrated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory whose SQLite files `haico migrate` made, once per test process."""
    data = tmp_path_factory.mktemp("migrated") / "data"
    _migrate(Settings(database_url=None, data_dir=data))
    return data


@pytest.fixture(scope="session")
def pg_migrated(pg_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A PostgreSQL database that `haico migrate` made, once per test process: the
    template of every server's database (a copy is much cheaper than migrating)."""
    name = f"test_tmpl_{uuid.uuid4().hex[:12]}"
    _in_a_thread(lambda: asyncio.run(_admin(f'CREATE DATABASE "{name}"')))
    url = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    _migrate(Settings(database_url=url, data_dir=tmp_path_factory.mktemp("pg-migrated")))
    yield name
    _in_a_thread(lambda: asyncio.run(_admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')))


async def _server_env(
    backend: str, tmp_path: Path, migrated: Path | str | None
) -> AsyncIterator[dict[str, str]]:
    data = tmp_path / "srv"
    env = {**os.environ, "HAICO_DATA_DIR": str(data), "HAICO_AUTH": "none"}
    env.pop("HAICO_DATABASE_URL", None)
    name = None
    if backend == "postgres":
        name = f"test_srv_{uuid.uuid4().hex[:12]}"
        await _create_database(name, template=str(migrated) if migrated else None)
        env["HAICO_DATABASE_URL"] = PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    elif migrated is not None:
        shutil.copytree(migrated, data)
    yield env
    if name:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def server_migrated(backend: str, request: pytest.FixtureRequest) -> Path | str:
    """The migrated database a server's is copied from (resolved outside the loop)."""
    return request.getfixturevalue("pg_migrated" if backend == "postgres" else "sqlite_migrated")


@pytest.fixture
async def server_env(
    backend: str, tmp_path: Path, server_migrated: Path | str
) -> AsyncIterator[dict[str, str]]:
    """Environment for a server process with its own database, at the schema's head
    (`haico migrate` finds nothing to do): a copy of one migrated once per process."""
    async for env in _server_env(backend, tmp_path, server_migrated):
        yield env


@pytest.fixture
async def empty_server_env(backend: str, tmp_path: Path) -> AsyncIterator[dict[str, str]]:
    """Environment for a server process with its own empty database (no schema)."""
    async for env in _server_env(backend, tmp_path, None):
        yield env


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Say how many tests ran on each backend, so a CI log shows the Postgres half ran."""
    counts: dict[str, dict[str, int]] = {}
    for outcome in ("passed", "failed", "error", "skipped"):
        for rep in terminalreporter.stats.get(outcome, []):
            nodeid = getattr(rep, "nodeid", "")
            if getattr(rep, "when", "call") not in ("call", "setup"):
                continue
            if outcome == "passed" and rep.when != "call":
                continue
            name = (
                "postgres"
                if "[postgres" in nodeid or "-postgres" in nodeid
                else ("sqlite" if "sqlite" in nodeid else "other")
            )
            counts.setdefault(name, {}).setdefault(outcome, 0)
            counts[name][outcome] += 1
    for name in ("sqlite", "postgres", "other"):
        if name in counts:
            parts = ", ".join(f"{n} {k}" for k, n in sorted(counts[name].items()))
            terminalreporter.write_line(f"[haico] {name} tests: {parts}")
    _time_by_file(terminalreporter)


def _time_by_file(terminalreporter: Any) -> None:
    """Where the suite's time went (set-up, call and teardown of every test, summed by
    file and by folder): the list the next cut of CI time is chosen from."""
    by_file: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for rep in reports:
            nodeid, duration = getattr(rep, "nodeid", ""), getattr(rep, "duration", None)
            if nodeid and isinstance(duration, float):
                name = nodeid.split("::", 1)[0]
                by_file[name] = by_file.get(name, 0.0) + duration
    if not by_file:
        return
    by_folder: dict[str, float] = {}
    for name, seconds in by_file.items():
        folder = "/".join(name.split("/")[:2])
        by_folder[folder] = by_folder.get(folder, 0.0) + seconds
    total = sum(by_file.values())
    terminalreporter.write_line(f"[haico] test time, all workers: {total:.0f} s")
    for title, table in (("folders", by_folder), ("files", by_file)):
        top = sorted(table.items(), key=lambda kv: -kv[1])[:15]
        terminalreporter.write_line(
            f"[haico] slowest {title}: " + ", ".join(f"{k} {v:.0f} s" for k, v in top)
        )


@pytest.fixture
def earlier_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The threads whose earlier turns the agent reads (`graph.turn_records`), in
    order."""
    reads: list[str] = []
    real = graph_module.turn_records

    async def counted(saver: Any, thread_id: str, **kwargs: Any) -> list[list[Any]]:
        reads.append(thread_id)
        return await real(saver, thread_id, **kwargs)

    monkeypatch.setattr(graph_module, "turn_records", counted)
    return reads
