"""The wheel (`make wheel`) installs into a clean virtual environment and serves the
studio and the API with no clone and no Node.js, and `haico.client` drives a
conversation from that environment.

It uses `dist/haico-<version>-py3-none-any.whl` when that is newer than every file it is
built from (`make test` builds it first), and builds one into a temporary directory
otherwise, which needs the studio built (`make studio`). The clean environment gets the
runtime lock first (hash-checked, from pip's cache), then the wheel, whose declared
dependencies must then be satisfied without another download."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx
import pytest

from tests.server import free_port

BACKEND = Path(__file__).resolve().parents[2]
ROOT = BACKEND.parent
STUDIO = ROOT / "frontend" / "out"
MAX_BYTES = 15 * 1024 * 1024
NODE_TOOLS = {"node", "nodejs", "npm", "npx", "corepack"}


def _version() -> str:
    import tomllib

    return str(tomllib.loads((BACKEND / "pyproject.toml").read_text())["project"]["version"])


def _sources() -> list[Path]:
    files = [BACKEND / "pyproject.toml", BACKEND / "setup.py", STUDIO / "index.html"]
    for folder in (BACKEND / "haico", BACKEND / "alembic"):
        files += [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    return files


def _build(into: Path) -> Path:
    assert (STUDIO / "index.html").is_file(), "the studio is not built: run `make wheel`"
    shutil.rmtree(BACKEND / "build", ignore_errors=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(into), str(BACKEND)],
        check=True,
    )
    shutil.rmtree(BACKEND / "build", ignore_errors=True)
    return next(into.glob("haico-*.whl"))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    made = ROOT / "dist" / f"haico-{_version()}-py3-none-any.whl"
    if made.is_file() and made.stat().st_mtime >= max(p.stat().st_mtime for p in _sources()):
        return made
    return _build(tmp_path_factory.mktemp("wheel"))


def test_the_wheel_holds_the_server_the_migrations_and_the_studio_only(wheel: Path) -> None:
    assert wheel.stat().st_size < MAX_BYTES
    names = zipfile.ZipFile(wheel).namelist()
    assert "haico/studio/index.html" in names
    assert "haico/migrations/env.py" in names
    versions = {p.name for p in (BACKEND / "alembic" / "versions").glob("*.py")}
    assert {Path(n).name for n in names if n.startswith("haico/migrations/versions/")} == versions
    assert "haico/client/__init__.py" in names and "haico/cli/main.py" in names
    assert not [n for n in names if n.endswith(".map")]
    assert not [n for n in names if "node_modules/" in n or n.startswith("tests/")]
    assert {n.split("/")[0] for n in names} == {"haico", f"haico-{_version()}.dist-info"}


def test_a_wheel_is_not_built_without_the_studio(tmp_path: Path) -> None:
    """A checkout whose studio was never built makes no wheel (one without a studio
    would install and serve, and nobody would notice until they opened `/`)."""
    backend = tmp_path / "backend"
    backend.mkdir()
    for name in ("pyproject.toml", "setup.py"):
        shutil.copy(BACKEND / name, backend / name)
    ignore = shutil.ignore_patterns("__pycache__")
    for name in ("haico", "alembic"):
        shutil.copytree(BACKEND / name, backend / name, ignore=ignore)
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(backend)],
        capture_output=True,
        text=True,
    )
    assert built.returncode != 0
    assert "the studio is not built" in built.stdout + built.stderr
    assert not list(tmp_path.glob("*.whl"))


def _path_without_node(tmp: Path, venv: Path) -> str:
    """The venv's bin, then /usr/bin's programs except Node.js's."""
    usr = tmp / "usr-bin"
    usr.mkdir()
    for program in Path("/usr/bin").iterdir():
        if program.name not in NODE_TOOLS:
            (usr / program.name).symlink_to(program)
    return f"{venv / 'bin'}:{usr}"


DRIVE = """
import json, sys
import haico
from haico.client import Client, TurnCompleted
with Client(sys.argv[1]) as c:
    conv = c.create_conversation(title="From the wheel")
    events = list(c.send(conv.thread_id, "todo: try the wheel"))
    todos = [t.text for t in c.workspace(conv.thread_id).todos]
    print(json.dumps({
        "package": haico.__file__,
        "last": events[-1].model_dump(),
        "completed": isinstance(events[-1], TurnCompleted),
        "todos": todos,
    }))
"""


def test_the_wheel_serves_the_studio_and_the_api_without_node(wheel: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    # --no-compile: byte-compiling every dependency took longer than the install.
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-compile"]
    lock = BACKEND / "requirements-runtime.lock"
    # Nothing of this checkout on the path: pip would find the editable haico there and
    # call the wheel installed already.
    clean = {k: v for k, v in os.environ.items() if k not in {"PYTHONPATH", "VIRTUAL_ENV"}}
    subprocess.run([*pip, "--require-hashes", "-r", str(lock)], check=True, env=clean)
    subprocess.run([*pip, "--no-index", str(wheel)], check=True, env=clean)

    env = {
        "PATH": _path_without_node(tmp_path, venv),
        "HOME": str(tmp_path),
        "HAICO_DATA_DIR": str(tmp_path / "data"),
        "HAICO_ALLOCATOR": "system",
    }
    assert shutil.which("node", path=env["PATH"]) is None
    assert subprocess.run(["sh", "-c", "command -v node"], env=env).returncode != 0
    run = tmp_path / "run"  # not the clone: nothing of it is beside the server
    run.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with (tmp_path / "serve.log").open("wb") as log:
        server = subprocess.Popen(
            [str(venv / "bin" / "haico"), "serve", "--port", str(port)],
            cwd=run,
            env=env,
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 90
        while True:
            assert server.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                health = httpx.get(f"{url}/api/health", timeout=2)
                if health.status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "haico serve did not start"
            time.sleep(0.3)
        assert health.json()["backend"] == "sqlite"

        page = httpx.get(f"{url}/", timeout=10)
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
        assert page.content == zipfile.ZipFile(wheel).read("haico/studio/index.html")

        driven = subprocess.run(
            [str(venv / "bin" / "python"), "-c", DRIVE, url],
            cwd=run,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert driven.returncode == 0, driven.stderr
        result = json.loads(driven.stdout)
        assert result["package"].startswith(str(venv))
        assert result["completed"] and result["last"]["node_id"].endswith(":1")
        assert result["todos"] == ["try the wheel"]
    finally:
        server.terminate()
        server.wait(timeout=30)
    output = (tmp_path / "serve.log").read_text()
    assert f"HAICO data: SQLite {(tmp_path / 'data' / 'haico.db').resolve()}" in output
