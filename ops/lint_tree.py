"""Build the import package as one folder tree of file symlinks (``.lint/tree/memwarden/...``) from
the ``package-dir`` mapping of pyproject.toml, so that tools which walk a package's folder (mypy,
import-linter's grimp) see ``memwarden.commands`` where setuptools installs it, not at ``commands/``.

Usage: ``python ops/lint_tree.py [TREE]`` (default ``.lint/tree``); prints the tree's path.
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SKIP = {"__pycache__", "node_modules"}


def build(tree: Path) -> Path:
    """Recreate ``tree`` with a symlink for every ``.py`` / ``.pyi`` file of every mapped package."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    mapping: dict[str, str] = config["package-dir"]
    if tree.exists():
        shutil.rmtree(tree)
    mapped = {(ROOT / d).resolve() for d in mapping.values()}
    for package, folder in mapping.items():
        source = (ROOT / folder).resolve()
        target = tree.joinpath(*package.split("."))
        for path in source.rglob("*.py*"):
            rel = path.relative_to(source)
            if path.suffix not in (".py", ".pyi") or SKIP & set(rel.parts):
                continue
            if any(parent in mapped and parent != source for parent in path.parents):
                continue  # belongs to another mapped package (memwarden/ holds none, but be exact)
            dest = target / rel
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.symlink_to(path)
    return tree


if __name__ == "__main__":
    print(build(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT / ".lint" / "tree").resolve()))
