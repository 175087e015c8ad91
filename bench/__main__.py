"""Run every benchmark: `.venv/bin/python -m bench` (what `make bench` runs).

Each benchmark runs in its own process (its own event loop and temporary database),
prints its table and one JSON line, and exits 1 when one of its targets fails. This
runner exits 1 when any of them did, after running them all.
"""

from __future__ import annotations

import subprocess
import sys
import time

# Latency benchmarks first: the storage benchmark writes ~100 MB, and the database
# server is still flushing it for a while afterwards.
BENCHMARKS = (
    "bench.graph_bench",
    "bench.checkout",
    "bench.branching",
    "bench.turns",
    "bench.storage",
)


def main() -> None:
    selected = [f"bench.{name}" for name in sys.argv[1:]] or list(BENCHMARKS)
    results: list[tuple[str, int, float]] = []
    for module in selected:
        print(f"\n=== {module} ===", flush=True)
        start = time.perf_counter()
        code = subprocess.call([sys.executable, "-m", module])
        results.append((module, code, time.perf_counter() - start))
    print("\n=== summary ===")
    for module, code, seconds in results:
        print(f"  {'PASS' if code == 0 else 'FAIL'}  {module}  ({seconds:.0f} s)")
    sys.exit(1 if any(code for _, code, _ in results) else 0)


if __name__ == "__main__":
    main()
