"""The memory allocator a serving process runs on.

CPython keeps small objects in its own arenas and gives an arena back only when every
object in it is gone. A long-running server keeps some objects for minutes (decoded
transcripts in the record cache, pooled connections' prepared statements) among many
that live for one request, so arenas stay pinned and the process grows slowly although
its live objects do not (docs/reliability.md, "Memory"). glibc's malloc, with
`PYTHONMALLOC=malloc`, behaves the same. jemalloc packs by size class and returns
unused pages on its own: in 30-minute soak runs the growth was a third of what it is
on CPython's allocator (not none).

`haico serve` therefore re-executes itself once, at start, with jemalloc preloaded and
`PYTHONMALLOC=malloc`, when `HAICO_ALLOCATOR` allows it (`auto`, the default: if the
library is installed; `jemalloc`: required; `system`: never). Workers started by
uvicorn inherit the environment.
"""

from __future__ import annotations

import ctypes.util
import os
import sys
from pathlib import Path

LIBRARY = "jemalloc"


class AllocatorMissing(RuntimeError):
    """`HAICO_ALLOCATOR=jemalloc`, and the library is not installed."""


def jemalloc_loaded(maps: Path = Path("/proc/self/maps")) -> bool:
    """Whether this process already runs with jemalloc mapped in."""
    try:
        return "libjemalloc" in maps.read_text()
    except OSError:
        return False


def find_jemalloc() -> str | None:
    """The library's file name as the dynamic loader finds it, or None."""
    return ctypes.util.find_library(LIBRARY)


def preload_environ(environ: dict[str, str], library: str) -> dict[str, str]:
    """`environ` with `library` preloaded and CPython allocating through malloc."""
    preload = environ.get("LD_PRELOAD", "")
    return {
        **environ,
        "LD_PRELOAD": f"{library}:{preload}" if preload else library,
        "PYTHONMALLOC": "malloc",
    }


def reexec_with_jemalloc(choice: str) -> None:
    """Replace this process with the same command under jemalloc, if `choice` asks
    for it and it is not in place yet; return when nothing is to be done."""
    if choice == "system" or not sys.platform.startswith("linux") or jemalloc_loaded():
        return
    library = find_jemalloc()
    if library is not None and library in os.environ.get("LD_PRELOAD", ""):
        return  # asked for already, and the loader could not use it: never loop
    if library is None:
        if choice == "jemalloc":
            raise AllocatorMissing(
                "HAICO_ALLOCATOR=jemalloc, but libjemalloc is not installed "
                "(Debian: apt-get install libjemalloc2)"
            )
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, sys.orig_argv, preload_environ(dict(os.environ), library))
