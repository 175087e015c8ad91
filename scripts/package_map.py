"""Count a commit's package map: packages, modules per package, import arrows.

    python3 scripts/package_map.py 325488e backend/app     # before the rename
    python3 scripts/package_map.py HEAD backend/haico      # now

It reads the commit through git (`git ls-tree`, `git show`), so any commit can be
counted without checking it out, and needs nothing but the standard library.

A package is a folder of the import package holding an `__init__.py` (the root
counts as one); a module is any other `.py` file, counted in the folder it sits in.
Every `import` and `from … import …` anywhere in a module (inside functions and
`TYPE_CHECKING` blocks too) is resolved to the module or package it names; an import
arrow is an ordered pair of distinct packages (A, B) where some module of A imports
something in B. Arrows are counted once per pair, however many imports make them.
"Between top-level packages" counts them again with every package folded into its
top-level one (`haico.services.turns` into `haico.services`; the root stays itself).
"""

from __future__ import annotations

import argparse
import ast
import subprocess
from collections import defaultdict
from pathlib import PurePosixPath


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout


def package_map(rev: str, root: str) -> tuple[dict[str, list[str]], set[tuple[str, str]]]:
    """The modules of each package (dotted names), and the import arrows between them."""
    top = PurePosixPath(root)
    name = top.name
    listed = _git("ls-tree", "-r", "--name-only", rev, root).split()
    files = [f for f in listed if f.endswith(".py")]
    packages = {
        ".".join((name, *PurePosixPath(f).relative_to(top).parent.parts))
        for f in files
        if f.endswith("/__init__.py")
    }
    modules: dict[str, list[str]] = defaultdict(list)
    sources: dict[str, str] = {}
    for f in files:
        path = PurePosixPath(f).relative_to(top)
        package = ".".join((name, *path.parent.parts))
        if path.name != "__init__.py":
            modules[package].append(path.stem)
        sources[f"{package}.{path.stem}" if path.name != "__init__.py" else package] = f

    def package_of(dotted: str) -> str | None:
        while dotted and dotted not in packages and dotted not in sources:
            dotted = dotted.rpartition(".")[0]
        if not dotted:
            return None
        return dotted if dotted in packages else dotted.rpartition(".")[0]

    arrows: set[tuple[str, str]] = set()
    for dotted, f in sources.items():
        here = dotted if dotted in packages else dotted.rpartition(".")[0]
        tree = ast.parse(_git("show", f"{rev}:{f}"))
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                targets = [f"{node.module}.{a.name}" for a in node.names]
            for target in targets:
                if target.split(".")[0] != name:
                    continue
                there = package_of(target)
                if there is not None and there != here:
                    arrows.add((here, there))
    return {p: sorted(modules.get(p, [])) for p in sorted(packages)}, arrows


def _top(package: str) -> str:
    return ".".join(package.split(".")[:2])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="a commit, e.g. HEAD")
    parser.add_argument("root", help="the import package's folder, e.g. backend/haico")
    parser.add_argument("--arrows", action="store_true", help="list every arrow too")
    args = parser.parse_args()
    modules, arrows = package_map(args.rev, args.root)
    counts = sorted(len(m) for m in modules.values())
    print(f"packages: {len(modules)}")
    print(f"modules: {sum(counts)}")
    median = counts[len(counts) // 2]
    print(f"modules per package: min {counts[0]}, median {median}, max {counts[-1]}")
    top = {(_top(a), _top(b)) for a, b in arrows if _top(a) != _top(b)}
    print(f"import arrows between packages: {len(arrows)}")
    print(f"import arrows between top-level packages: {len(top)}")
    for package, names in modules.items():
        print(f"  {package}: {len(names)}")
    if args.arrows:
        for a, b in sorted(arrows):
            print(f"  {a} -> {b}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
