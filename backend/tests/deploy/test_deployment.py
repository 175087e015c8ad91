"""The deployment files: what can be proved without a container engine.

The compose files, the Dockerfile and the lock are parsed and checked; `entrypoint.sh`
runs on this host, twice at once, against a fresh PostgreSQL database.
"""

from __future__ import annotations

import asyncio
import os
import re
import subprocess
import sys
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import yaml
from packaging.requirements import Requirement

from haico.config import Settings
from tests.conftest import PG_ADMIN_URL, _admin
from tests.server import SYSTEM_ALLOCATOR, free_port

ROOT = Path(__file__).resolve().parents[3]
BACKEND = ROOT / "backend"
ENTRYPOINT = ROOT / "entrypoint.sh"


class _ComposeLoader(yaml.SafeLoader):
    """YAML with compose's `!reset` / `!override` merge tags."""


def _tagged(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node)
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_ComposeLoader.add_constructor("!reset", _tagged)
_ComposeLoader.add_constructor("!override", _tagged)


def _compose(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.load((ROOT / name).read_text(), Loader=_ComposeLoader)
    return data


def _default(value: str) -> str:
    """`${NAME:-default}` -> default; a plain value as it is."""
    m = re.fullmatch(r"\$\{[A-Z0-9_]+:-(.+)\}", value)
    return m.group(1) if m else value


def _env_example() -> set[str]:
    names = set()
    for line in (ROOT / ".env.example").read_text().splitlines():
        m = re.match(r"^#?\s*([A-Z][A-Z0-9_]*)=", line)
        if m:
            names.add(m.group(1))
    return names


def test_compose_services_healthchecks_and_dependencies() -> None:
    compose = _compose("docker-compose.yml")
    services = compose["services"]
    assert set(services) == {"db", "app"}
    db, app = services["db"], services["app"]
    assert _default(db["image"]).startswith("postgres:")
    assert any(v.endswith(":/var/lib/postgresql/data") for v in db["volumes"])
    # Healthy only once the database exists and the server listens on TCP (what the app
    # connects to): pg_isready says yes to the first start's socket-only server.
    db_check = " ".join(db["healthcheck"]["test"])
    assert "pg_isready" not in db_check
    assert "psql -h 127.0.0.1 -U haico -d haico" in db_check
    assert app["depends_on"] == {"db": {"condition": "service_healthy"}}
    assert "/api/health" in " ".join(app["healthcheck"]["test"])
    assert app["build"]["context"] == "."
    # The Dockerfile's base images, from compose's variables (official by default).
    assert _default(app["build"]["args"]["NODE_IMAGE"]).startswith("node:")
    assert _default(app["build"]["args"]["PYTHON_IMAGE"]).startswith("python:")
    # Settings through .env, which may be absent (every value has a default).
    assert app["env_file"] == [{"path": ".env", "required": False}]
    assert app["environment"]["HAICO_DATABASE_URL"].startswith("postgresql://")
    assert "@db:5432/" in app["environment"]["HAICO_DATABASE_URL"]
    assert set(compose["volumes"]) >= {"pgdata"}


def test_compose_requires_no_variable_and_documents_every_one() -> None:
    """No `${X:?}` (a secret is required only where it is used, and HAICO generates
    its own when one replica runs); every variable the compose files read is in
    .env.example."""
    documented = _env_example()
    for name in ("docker-compose.yml", "docker-compose.replicas.yml"):
        text = (ROOT / name).read_text()
        assert ":?" not in text, f"{name} requires a variable"
        used = set(re.findall(r"\$\{([A-Z0-9_]+)", text))
        assert used <= documented, f"{name} reads {used - documented}, not in .env.example"
    assert "HAICO_SECRET_KEY" in documented


def test_replicas_behind_a_proxy() -> None:
    base = _compose("docker-compose.yml")["services"]
    over = _compose("docker-compose.replicas.yml")["services"]
    assert over["app"]["ports"] == []  # the proxy owns the port
    assert str(over["app"]["deploy"]["replicas"]).startswith("${HAICO_REPLICAS")
    proxy = over["proxy"]
    assert _default(proxy["image"]).split(":")[0] in {"caddy", "nginx"}
    assert proxy["depends_on"] == {"app": {"condition": "service_healthy"}}
    assert proxy["ports"] == base["app"]["ports"]
    mount = next(v for v in proxy["volumes"] if v.endswith(":/etc/caddy/Caddyfile:ro"))
    caddyfile = (ROOT / mount.split(":")[0]).read_text()
    assert "flush_interval -1" in caddyfile  # SSE unbuffered
    # Unset, the two variables the file reads (tests/deploy/test_replicas_proxy.py sets
    # them) give compose's setup: port 8000 in the container, every `app` container.
    assert proxy["ports"][0].endswith(":8000")
    assert ":{$HAICO_PROXY_PORT:8000} {" in caddyfile
    assert "{$HAICO_UPSTREAMS:import compose_replicas}" in caddyfile
    assert re.search(r"\(compose_replicas\) \{\s*dynamic a \{\s*name app\s*port 8000", caddyfile)
    # The proxy drops an idle connection to a replica before the replica does.
    pool = re.search(r"transport http \{\s*keepalive (\d+)s", caddyfile)
    assert pool is not None and int(pool.group(1)) < Settings(secret_key="x").keep_alive_seconds


def _stages(dockerfile: str) -> list[list[str]]:
    """The Dockerfile's instructions (continuations joined), split into stages."""
    text = re.sub(r"\\\n\s*", " ", dockerfile)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.startswith("#")]
    # The global ARGs before the first FROM give the base images' defaults.
    args = dict(
        ln.split(None, 1)[1].split("=", 1) for ln in lines if ln.startswith("ARG ") and "=" in ln
    )
    stages: list[list[str]] = []
    for line in lines:
        if line.upper().startswith("FROM "):
            line = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], line)
            stages.append([])
        if stages:
            stages[-1].append(line)
    return stages


def test_dockerfile_is_multi_stage_locked_and_unprivileged() -> None:
    stages = _stages((ROOT / "Dockerfile").read_text())
    assert len(stages) == 3
    studio, python, final = stages
    assert studio[0].startswith("FROM node:") and "npm ci" in " ".join(studio)
    joined = " ".join(python)
    assert "COPY backend/requirements-runtime.lock /tmp/requirements-runtime.lock" in joined
    assert "--require-hashes -r /tmp/requirements-runtime.lock" in joined
    assert "--no-deps -e ." in joined
    assert final[0].startswith("FROM python:") and "slim" in final[0]
    # The one package the final stage installs is the allocator `haico serve` requires
    # there (HAICO_ALLOCATOR=jemalloc), with the package lists removed afterwards.
    (apt,) = [ln for ln in final if "apt-get" in ln]
    assert apt.endswith("&& rm -rf /var/lib/apt/lists/*")
    installed = apt.split("--no-install-recommends", 1)[1].split("&&")[0].split()
    assert installed == ["libjemalloc2"]
    assert "ENV HAICO_ALLOCATOR=jemalloc" in final
    final_text = "\n".join(ln for ln in final if ln != apt)
    for build_tool in ("apt-get", "npm", "gcc", "pip install"):
        assert build_tool not in final_text
    user = next(ln for ln in final if ln.startswith("USER "))
    assert user.split()[1] not in {"root", "0"}
    health = next(ln for ln in final if ln.startswith("HEALTHCHECK "))
    assert "/api/health" in health
    assert 'ENTRYPOINT ["entrypoint.sh"]' in final
    assert "COPY entrypoint.sh /usr/local/bin/entrypoint.sh" in final


def _pins(lock: Path) -> dict[str, str]:
    """Every `name==version` of a pip-compile lock (names normalised); each must carry
    hashes, or pip's --require-hashes refuses the whole file."""
    pins: dict[str, str] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", lock.read_text()):
        m = re.match(r"([A-Za-z0-9_.\-]+)==([^\s;\\]+)", block)
        if m:
            assert "--hash=sha256:" in block, (
                f"{m.group(1)} is pinned without a hash in {lock.name}"
            )
            pins[_normal(m.group(1))] = m.group(2)
    return pins


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _project() -> dict[str, Any]:
    import tomllib

    project: dict[str, Any] = tomllib.loads((BACKEND / "pyproject.toml").read_text())["project"]
    return project


def _assert_covers(pins: dict[str, str], wanted: list[Requirement], lock: str) -> None:
    for req in wanted:
        name = _normal(req.name)
        assert name in pins, f"{req.name} is not in {lock}: run `make lock`"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"{req.name}=={pins[name]} in {lock} does not satisfy {req.specifier}: run `make lock`"
        )


def test_lock_pins_every_dependency_with_hashes() -> None:
    """backend/requirements.lock covers pyproject.toml (runtime and every extra: dev, and
    analysis, whose packages dev holds too) at versions its ranges allow, every pin with
    hashes. Fails after a dependency is added or narrowed without `make lock`."""
    project = _project()
    wanted = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        wanted += [Requirement(r) for r in extra]
    _assert_covers(_pins(BACKEND / "requirements.lock"), wanted, "requirements.lock")


def test_runtime_lock_is_the_full_lock_without_dev_tools() -> None:
    """backend/requirements-runtime.lock (what the image installs) covers the runtime
    dependencies with hashes, at exactly the versions of requirements.lock (what the
    tests ran against), and leaves out every dev-only dependency."""
    project = _project()
    runtime = _pins(BACKEND / "requirements-runtime.lock")
    full = _pins(BACKEND / "requirements.lock")
    _assert_covers(
        runtime, [Requirement(r) for r in project["dependencies"]], "requirements-runtime.lock"
    )
    differ = {n: (v, full.get(n)) for n, v in runtime.items() if full.get(n) != v}
    assert not differ, f"runtime lock and full lock disagree {differ}: run `make lock`"
    for tool in ("pytest", "pytest-asyncio", "ruff", "mypy", "import-linter", "schemathesis"):
        assert tool not in runtime, f"{tool} (dev only) is in requirements-runtime.lock"


def test_every_setting_is_documented_once() -> None:
    """docs/operations.md has the one table of settings: every field of `Settings` is a
    row there, and every `HAICO_*` row of that table is a real setting."""
    from haico.config import Settings

    text = (ROOT / "docs" / "operations.md").read_text()
    section = text.split("## Configuration", 1)[1].split("\n### ", 1)[0]
    rows = set(re.findall(r"^\| `(HAICO_[A-Z0-9_]+)` \|", section, re.M))
    settings = {f"HAICO_{name.upper()}" for name in Settings.model_fields}
    assert settings - rows == set(), f"settings missing from docs/operations.md: {settings - rows}"
    assert rows - settings == set(), (
        f"docs/operations.md documents unknown settings: {rows - settings}"
    )


# --- entrypoint.sh on this host ---------------------------------------------------


@pytest.fixture
async def fresh_pg(pg_url: str) -> AsyncIterator[str]:
    """An empty database (no schema at all), dropped afterwards. Asking for `pg_url`
    first gives the suite's skip/fail behaviour when PostgreSQL is missing."""
    name = f"test_entry_{uuid.uuid4().hex[:12]}"
    await _admin(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        await _admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _entry_env(tmp: Path, db_url: str, port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAICO_")}
    env.update(
        SYSTEM_ALLOCATOR,
        HAICO_CMD=f"{sys.executable} -m haico.cli.main",
        HAICO_PYTHON=sys.executable,
        HAICO_DATABASE_URL=db_url,
        HAICO_DATA_DIR=str(tmp / f"data-{port}"),
        HAICO_HOST="127.0.0.1",
        PORT=str(port),
        HAICO_DB_WAIT_SECONDS="0.2",
    )
    return env


def _read(path: Path) -> str:
    return path.read_text()


async def _wait_healthy(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    deadline = time.monotonic() + 90
    async with httpx.AsyncClient(base_url=url, timeout=2) as c:
        while True:
            assert proc.poll() is None, f"entrypoint exited:\n{_read(log)}"
            try:
                if (await c.get("/api/health")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, f"no health:\n{_read(log)}"
            await asyncio.sleep(0.2)


async def test_entrypoint_twice_at_once_on_a_fresh_database(fresh_pg: str, tmp_path: Path) -> None:
    """Two copies of entrypoint.sh started together on an empty database: both wait,
    migrate one after the other under the advisory lock, create the local user once,
    and serve the same data."""
    ports = [free_port(), free_port()]
    procs: list[subprocess.Popen[bytes]] = []
    logs = [tmp_path / f"entry-{p}.log" for p in ports]
    try:
        for port, log in zip(ports, logs, strict=True):
            with log.open("wb") as out:
                procs.append(
                    subprocess.Popen(
                        ["sh", str(ENTRYPOINT), "serve"],
                        cwd=BACKEND,
                        env=_entry_env(tmp_path, fresh_pg, port),
                        stdout=out,
                        stderr=subprocess.STDOUT,
                    )
                )
        for port, proc, log in zip(ports, procs, logs, strict=True):
            await _wait_healthy(f"http://127.0.0.1:{port}", proc, log)
        for log in logs:
            text = _read(log)
            assert "the database answers" in text
            assert "schema is up to date" in text
        a, b = (httpx.AsyncClient(base_url=f"http://127.0.0.1:{p}", timeout=30) for p in ports)
        async with a, b:
            tid = (await a.post("/api/conversations", json={"title": "both"})).json()["thread_id"]
            seen = (await b.get(f"/api/conversations/{tid}")).json()
            assert seen["title"] == "both"
        conn = await asyncpg.connect(fresh_pg)
        try:
            assert await conn.fetchval("SELECT count(*) FROM alembic_version") == 1
            assert await conn.fetchval("SELECT count(*) FROM users WHERE name = 'local'") == 1
            assert await conn.fetchval("SELECT count(*) FROM checkpoint_migrations") > 0
        finally:
            await conn.close()
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()


def test_entrypoint_gives_up_on_a_missing_database(tmp_path: Path) -> None:
    """Bounded retries and a clear message, then a non-zero exit (nothing served)."""
    port = free_port()
    env = _entry_env(tmp_path, f"postgresql://postgres@127.0.0.1:{free_port()}/none", port)
    env["HAICO_DB_WAIT_ATTEMPTS"] = "3"
    out = subprocess.run(
        ["sh", str(ENTRYPOINT), "serve"],
        cwd=BACKEND,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 69, out.stderr
    assert out.stderr.count("waiting for the database") == 2
    assert "did not answer after 3 attempts" in out.stderr
    assert "HAICO_DATABASE_URL" in out.stderr


def test_entrypoint_passes_other_commands_to_the_cli(tmp_path: Path) -> None:
    env = _entry_env(tmp_path, "", free_port())
    del env["HAICO_DATABASE_URL"]  # the embedded SQLite default
    out = subprocess.run(
        ["sh", str(ENTRYPOINT), "migrate"],
        cwd=BACKEND,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert "schema is up to date" in out.stdout
