"""Where the server finds the studio and the migrations (`haico.paths`): the package's
own copy (an installed wheel) before the clone's folders beside it; and a server with
no studio at all serves the API and says at `/` how to build one."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

import haico.main
from haico import paths
from haico.config import Settings
from haico.main import create_app


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clone's shape: backend/haico (the package), backend/alembic, frontend/out."""
    package = tmp_path / "backend" / "haico"
    package.mkdir(parents=True)
    monkeypatch.setattr(paths, "PACKAGE", package)
    monkeypatch.setattr(paths, "_BESIDE", package.parent)
    return tmp_path


def _file(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("x")
    return path


def test_a_clone_serves_its_own_folders(layout: Path) -> None:
    assert paths.studio_dir() == layout / "frontend" / "out"
    assert paths.migrations_dir() == layout / "backend" / "alembic"
    assert paths.alembic_ini() is None
    _file(layout / "backend" / "alembic.ini")
    assert paths.alembic_ini() == layout / "backend" / "alembic.ini"


def test_the_packaged_copy_wins_once_it_is_whole(layout: Path) -> None:
    package = layout / "backend" / "haico"
    (package / "studio").mkdir()  # an empty folder is no studio
    (package / "migrations" / "versions").mkdir(parents=True)
    assert paths.studio_dir() == layout / "frontend" / "out"
    assert paths.migrations_dir() == layout / "backend" / "alembic"
    _file(package / "studio" / "index.html")
    _file(package / "migrations" / "env.py")
    assert paths.studio_dir() == package / "studio"
    assert paths.migrations_dir() == package / "migrations"


async def test_without_a_studio_the_api_serves_and_root_says_how_to_build_it(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(haico.main, "STUDIO_DIR", tmp_path / "no-studio")
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            page = await c.get("/")
            assert page.status_code == 200 and "make studio" in page.text
            assert "pip install dist/haico-*.whl" in page.text
            assert (await c.get("/api/health")).json()["status"] == "ok"
            assert (await c.post("/api/conversations", json={})).status_code == 201


async def test_with_a_studio_root_serves_its_index(
    settings: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    studio = tmp_path / "studio"
    studio.mkdir()
    (studio / "index.html").write_text("<!doctype html><title>the studio</title>")
    monkeypatch.setattr(haico.main, "STUDIO_DIR", studio)
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://haico.test") as c:
            assert "the studio" in (await c.get("/")).text
