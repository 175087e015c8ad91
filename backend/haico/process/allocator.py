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
library is installed; `jemalloc`: required; `system`: never). It does so before it
imports the app (`haico.cli.main.main`), which only the final process then pays for. Workers
started by uvicorn inherit the environment.

jemalloc's own counters (`HAICO_MEMORY_REPORT_SECONDS`) showed what was left: over
half an hour's soak the live heap (`allocated`) stayed flat while `resident` grew:
freed pages jemalloc kept (it gives them back only as it works in the arena that
freed them), and partly filled pages spread over its several arenas. `JEMALLOC_CONF`
is therefore the default `MALLOC_CONF` (one set by the operator wins): one arena (the
server allocates almost only on its event loop's thread), and a background thread
that returns freed pages after a second, at once (no lazy `MADV_FREE` stage, which
still counts in RSS). With both, an hour's soak held RSS within 181-189 MB after its
warm-up, live memory flat (docs/reliability.md, "Memory").
"""

from __future__ import annotations

import asyncio
import ctypes
import ctypes.util
import logging
import os
import sys
from pathlib import Path

LIBRARY = "jemalloc"
JEMALLOC_CONF = "narenas:1,background_thread:true,dirty_decay_ms:1000,muzzy_decay_ms:0"

log = logging.getLogger("haico.memory")

# jemalloc's counters, in bytes (`mallctl("stats.<name>")`). With PYTHONMALLOC=malloc
# every Python object is allocated through it too, so `allocated` is the whole live
# heap; `resident` is what jemalloc holds in RAM, `retained` what it keeps mapped
# without using (returned to the system by `dirty_decay_ms`/`muzzy_decay_ms`).
JEMALLOC_STATS = ("allocated", "active", "metadata", "resident", "mapped", "retained")


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
    """`environ` with `library` preloaded, CPython allocating through malloc, and
    jemalloc's settings (`JEMALLOC_CONF` unless `MALLOC_CONF` is set)."""
    preload = environ.get("LD_PRELOAD", "")
    return {
        "MALLOC_CONF": JEMALLOC_CONF,
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


def jemalloc_stats() -> dict[str, int] | None:
    """jemalloc's counters for this process (`JEMALLOC_STATS`), refreshed now; None
    when jemalloc is not the allocator."""
    if not jemalloc_loaded():
        return None
    try:
        mallctl = ctypes.CDLL(None).mallctl
    except AttributeError:
        return None
    size_p = ctypes.POINTER(ctypes.c_size_t)
    mallctl.argtypes = [ctypes.c_char_p, ctypes.c_void_p, size_p, ctypes.c_void_p, ctypes.c_size_t]
    # The counters are a snapshot taken at the last "epoch" write.
    epoch = ctypes.c_uint64(1)
    mallctl(b"epoch", None, None, ctypes.byref(epoch), ctypes.sizeof(epoch))
    out: dict[str, int] = {}
    for name in JEMALLOC_STATS:
        value = ctypes.c_size_t(0)
        size = ctypes.c_size_t(ctypes.sizeof(value))
        if mallctl(f"stats.{name}".encode(), ctypes.byref(value), ctypes.byref(size), None, 0) == 0:
            out[name] = value.value
    return out


# The resident set as /proc splits it (`/proc/PID/status`): `rss` = `anon` (the heap,
# jemalloc's pages among them, and thread stacks) + `file` (mapped libraries and files)
# + shared memory. Comparing `anon` with jemalloc's `resident` shows whether growth is
# the allocator's or outside it.
RSS_FIELDS = {"VmRSS": "rss", "RssAnon": "anon", "RssFile": "file"}


def rss_split(status: Path = Path("/proc/self/status")) -> dict[str, int]:
    """This process's resident memory (`RSS_FIELDS`) in bytes; {} without /proc."""
    out: dict[str, int] = {}
    try:
        for line in status.read_text().splitlines():
            key, _, value = line.partition(":")
            if key in RSS_FIELDS:
                out[RSS_FIELDS[key]] = int(value.split()[0]) * 1024
    except OSError:
        return {}
    return out


def memory_line() -> str:
    """`rss=… anon=… file=… allocated=…` in MB: the resident set and its split, then
    jemalloc's counters when it is in use."""
    figures = {**rss_split(), **(jemalloc_stats() or {})}
    return " ".join(f"{k}={v / 2**20:.1f}MB" for k, v in figures.items())


async def report_memory(every: float) -> None:
    """Log `memory_line()` every `every` seconds (`HAICO_MEMORY_REPORT_SECONDS`), so a
    long run shows whether live memory (`allocated`) or only the allocator's hold on
    pages (`resident` - `allocated`) grows."""
    while True:
        log.info("memory pid=%d %s", os.getpid(), memory_line())
        await asyncio.sleep(every)
