"""`haico serve` runs on jemalloc when it can (`haico.process.allocator`, `HAICO_ALLOCATOR`).

The served process is checked from outside (its memory maps and environment), for
each setting; the decisions that need a machine without the library, or a loader
that refused it, are checked in-process with the lookup and `execve` replaced.
"""

from __future__ import annotations

import asyncio
import logging
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from haico.config import Settings
from haico.main import create_app
from haico.process import allocator
from tests.conftest import sqlite_schema
from tests.server import Server


def _maps(pid: int) -> str:
    return Path(f"/proc/{pid}/maps").read_text()


def _environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _env(tmp_path: Path, choice: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAICO_")}
    env.pop("LD_PRELOAD", None)
    env.pop("PYTHONMALLOC", None)
    return {**env, "HAICO_DATA_DIR": str(tmp_path), "HAICO_ALLOCATOR": choice}


@pytest.mark.parametrize("choice", ["auto", "system"])
async def test_the_served_process_runs_on_the_allocator_asked_for(
    tmp_path: Path, choice: str
) -> None:
    server = Server(_env(tmp_path, choice))
    await server.start()
    try:
        assert server.proc is not None
        maps, environ = _maps(server.proc.pid), _environ(server.proc.pid)
    finally:
        server.stop()
    # `auto` uses jemalloc where it is installed (the CI machine has it), else not.
    wanted = choice == "auto" and allocator.find_jemalloc() is not None
    assert ("libjemalloc" in maps) is wanted
    assert (environ.get("PYTHONMALLOC") == "malloc") is wanted
    assert (environ.get("MALLOC_CONF") == allocator.JEMALLOC_CONF) is wanted


def _no_exec(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    calls: list[Any] = []
    monkeypatch.setattr(allocator.os, "execve", lambda *args: calls.append(args))
    monkeypatch.setattr(allocator, "jemalloc_loaded", lambda: False)
    monkeypatch.delenv("LD_PRELOAD", raising=False)
    return calls


def test_required_jemalloc_that_is_missing_refuses_to_start(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _no_exec(monkeypatch)
    monkeypatch.setattr(allocator, "find_jemalloc", lambda: None)
    with pytest.raises(allocator.AllocatorMissing, match="apt-get install libjemalloc2"):
        allocator.reexec_with_jemalloc("jemalloc")
    allocator.reexec_with_jemalloc("auto")  # auto goes on with CPython's own
    assert calls == []


def test_the_command_is_run_again_once_with_the_library_preloaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls = _no_exec(monkeypatch)
    monkeypatch.setattr(allocator, "find_jemalloc", lambda: "libjemalloc.so.2")
    monkeypatch.setenv("LD_PRELOAD", "libother.so")
    allocator.reexec_with_jemalloc("auto")
    ((executable, argv, env),) = calls
    assert (executable, argv) == (sys.executable, sys.orig_argv)  # the same command
    assert env["LD_PRELOAD"] == "libjemalloc.so.2:libother.so"
    assert env["PYTHONMALLOC"] == "malloc"
    assert env["MALLOC_CONF"] == allocator.JEMALLOC_CONF
    # An operator's own jemalloc settings are kept.
    monkeypatch.setenv("MALLOC_CONF", "narenas:2")
    assert allocator.preload_environ(dict(os.environ), "lib.so")["MALLOC_CONF"] == "narenas:2"
    # The loader already had it and still did not load it: never a second time.
    monkeypatch.setenv("LD_PRELOAD", env["LD_PRELOAD"])
    allocator.reexec_with_jemalloc("auto")
    assert len(calls) == 1


# `haico serve` with the exec replaced by a report of what the process had imported
# by then: the app (and the server) must come after the allocator's decision.
_SERVE_UNTIL_EXEC = """
import sys
from haico.process import allocator
def execve(executable, argv, env):
    print(env["LD_PRELOAD"], "haico.main" in sys.modules, "uvicorn" in sys.modules)
    sys.exit(0)
allocator.os.execve = execve
allocator.find_jemalloc = lambda: "libjemalloc.so.2"
allocator.jemalloc_loaded = lambda: False
from haico.cli.main import main
main(["serve", "--port", "1"])
"""


def test_serve_re_executes_before_it_imports_the_app(tmp_path: Path) -> None:
    """The process that is replaced has not paid for importing the app: only the
    process that serves imports it."""
    out = subprocess.run(
        [sys.executable, "-c", _SERVE_UNTIL_EXEC],
        env=_env(tmp_path, "auto"),
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.split()
    assert out == ["libjemalloc.so.2", "False", "False"]


_GROW = """
from haico.process.allocator import jemalloc_stats, memory_line
before = jemalloc_stats()
held = [bytes(1000) for _ in range(50_000)]
after = jemalloc_stats()
print(memory_line())
print(None if before is None else after["allocated"] - before["allocated"])
"""


@pytest.mark.parametrize("choice", ["jemalloc", "system"])
def test_memory_figures_count_live_allocations_under_jemalloc(tmp_path: Path, choice: str) -> None:
    env = _env(tmp_path, choice)
    library = allocator.find_jemalloc()
    if choice == "jemalloc" and library is not None:
        env = allocator.preload_environ(env, library)
    out = subprocess.run(
        [sys.executable, "-c", _GROW], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    line, grown = out
    assert line.startswith("rss=") and line.endswith("MB")
    if choice == "jemalloc" and library is not None:
        # 50,000 objects of ~1 KB each, all alive: jemalloc counts them.
        assert 45 * 2**20 < int(grown) < 80 * 2**20
        assert {"allocated=", "resident=", "retained="} <= {
            w.split("=")[0] + "=" for w in line.split()
        }
    else:
        assert grown == "None"
        assert [w.split("=")[0] for w in line.split()] == ["rss", "anon", "file"]


def test_the_resident_set_is_split_into_anonymous_and_file_backed(tmp_path: Path) -> None:
    status = tmp_path / "status"
    status.write_text(
        "Name:\tpython\nVmRSS:\t  204800 kB\nRssAnon:\t  153600 kB\n"
        "RssFile:\t   51200 kB\nRssShmem:\t       0 kB\n"
    )
    assert allocator.rss_split(status) == {
        "rss": 200 * 2**20,
        "anon": 150 * 2**20,
        "file": 50 * 2**20,
    }
    assert allocator.rss_split(tmp_path / "missing") == {}


_HOLD = """
from haico.process.allocator import rss_split
before = rss_split()
held = bytearray(100 * 2**20)
held[::4096] = b"x" * len(held[::4096])  # touch every page
after = rss_split()
print(after["anon"] - before["anon"], after["file"] - before["file"])
"""


def test_memory_a_process_holds_shows_as_anonymous(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-c", _HOLD],
        env=_env(tmp_path, "system"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    anon, file = (int(x) for x in out)
    assert 95 * 2**20 <= anon < 110 * 2**20
    assert abs(file) < 5 * 2**20


async def test_a_serving_process_reports_its_memory_when_asked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(data_dir=tmp_path / "d", secret_key="t", memory_report_seconds=0.05)
    await sqlite_schema(settings)
    app = create_app(settings)
    with caplog.at_level(logging.INFO, logger="haico.memory"):
        async with app.router.lifespan_context(app):
            await asyncio.sleep(0.3)
        reported = [r.getMessage() for r in caplog.records if r.name == "haico.memory"]
        await asyncio.sleep(0.2)  # none after shutdown
    assert len(reported) >= 3
    assert all(m.startswith(f"memory pid={os.getpid()} rss=") for m in reported)
    assert len([r for r in caplog.records if r.name == "haico.memory"]) == len(reported)


_GIVE_BACK = """
import time
from haico.process.allocator import jemalloc_stats
held = [bytes(1000) for _ in range(100_000)]
peak = jemalloc_stats()
del held
deadline = time.monotonic() + 10
while time.monotonic() < deadline:
    now = jemalloc_stats()
    if now is None or now["resident"] < peak["resident"] - 80 * 2**20:
        break
    time.sleep(0.2)
print(None if now is None else (peak["resident"] - now["resident"]) // 2**20)
"""


def test_freed_memory_goes_back_to_the_system_within_seconds(tmp_path: Path) -> None:
    """Under the settings `haico serve` gives jemalloc, ~100 MB freed by an idle
    process leave its resident memory without any further allocation (jemalloc's
    background thread returns them)."""
    env = _env(tmp_path, "jemalloc")
    library = allocator.find_jemalloc()
    if library is not None:
        env = allocator.preload_environ(env, library)
    started = time.monotonic()
    returned = subprocess.run(
        [sys.executable, "-c", _GIVE_BACK], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    if library is None:
        assert returned == "None"  # CPython's allocator: nothing of jemalloc's to ask
        return
    assert int(returned) >= 80, returned
    assert time.monotonic() - started < 10
